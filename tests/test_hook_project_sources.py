"""``ssa hook``: sources with no standard location (Aider's history, Crush's store) are
looked for in the manager's project, its work tree root and main worktree included."""

from __future__ import annotations

import io
import json
import subprocess
import uuid
from pathlib import Path

import pytest

from actors.agents import hook as hook_mod
from actors.agents.manage import run_manage
from actors.agents.project import project_roots
from actors.testing import AiderChatHistory, ClaudeCodeTranscript, CrushTranscript, Reply, Typed
from actors.upstream.aider.paths import history_thread_id


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
                        "HOME": str(cwd), "PATH": "/usr/bin:/bin"})


def test_project_roots_of_a_sub_directory_a_worktree_and_a_plain_directory(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("x\n")
    _git(repo, "add", "README")
    _git(repo, "commit", "-q", "-m", "init")
    _git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    real = Path(tmp_path).resolve()
    assert project_roots(str(repo / "src" / "deep")) == [str(real / "repo" / "src" / "deep"),
                                                        str(real / "repo")]
    assert project_roots(str(repo)) == [str(real / "repo")]
    assert project_roots(str(tmp_path / "wt")) == [str(real / "wt"), str(real / "repo")]
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_roots(str(plain)) == [str(real / "plain")]
    assert project_roots(str(tmp_path / "gone")) == [str(real / "gone")]


@pytest.fixture
def manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, bytes]:
    """A home whose project holds a manager Claude Code session; returns (project, input)."""
    root = tmp_path / "home"
    project = root / "proj"
    (project / ".git").mkdir(parents=True)
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME", "OPENCODE_DB",
                 "PI_CODING_AGENT_DIR", "SSA_DB", "XDG_STATE_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setenv("SSA_STATE_DIR", str(root / "state"))
    (root / "state").mkdir()
    claude = root / ".claude" / "projects" / str(project).replace("/", "-")
    claude.mkdir(parents=True)
    session = ClaudeCodeTranscript(claude / f"{uuid.uuid4()}.jsonl", cwd=str(project))
    session.append(Typed("plan the work"), Reply("ok"))
    raw = json.dumps({"session_id": session.session_id, "cwd": str(project / "sub"),
                      "hook_event_name": "UserPromptSubmit",
                      "transcript_path": str(session.path), "prompt": "p"}).encode()
    (project / "sub").mkdir()
    run_manage(root / "state" / "state.sqlite", f"agent:main:claude:{session.session_id}",
               off=False, wake=True, out=io.StringIO())  # sessions are workers until then
    return project, raw


def _context(raw: bytes) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert hook_mod.main(["claude-code", "--timeout", "0"], stdin=io.BytesIO(raw),
                         stdout=out, stderr=err) == 0
    assert err.getvalue() == ""
    text = out.getvalue()
    return "" if not text else str(json.loads(text)["hookSpecificOutput"]["additionalContext"])


def _targets(context: str) -> list[str]:
    return sorted(line.split('"')[1] for line in context.splitlines()
                  if line.startswith('Session "'))


def test_aider_and_crush_sessions_of_the_managers_project_notify_it(
        manager: tuple[Path, bytes]) -> None:
    project, raw = manager
    history = AiderChatHistory(project / ".aider.chat.history.md")
    history.append(Typed("an earlier aider prompt"), Reply("ok"))
    (project / ".crush").mkdir()
    crush = CrushTranscript(project / ".crush" / "crush.db")
    crush.append(Typed("an earlier crush prompt"), Reply("ok"))
    try:
        assert _context(raw) == ""  # first turn: both linked at their end
        history.append(Typed("typed into aider"), Reply("done"))
        crush.append(Typed("typed into crush"), Reply("done"))
        aider_key = f"agent:main:aider:{history_thread_id(str(history.path.resolve()))}"
        assert _targets(_context(raw)) == sorted([aider_key,
                                                  f"agent:main:crush:{crush.session_id}"])
        assert _context(raw) == ""  # acknowledged
    finally:
        crush.close()


def test_an_aider_history_of_another_project_is_not_looked_for(
        manager: tuple[Path, bytes], tmp_path: Path) -> None:
    _, raw = manager
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    history = AiderChatHistory(elsewhere / ".aider.chat.history.md")
    history.append(Typed("an earlier prompt"), Reply("ok"))
    assert _context(raw) == ""
    history.append(Typed("typed in another project"), Reply("ok"))
    assert _context(raw) == ""
