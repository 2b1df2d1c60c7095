"""Sessions recorded on Windows are read like the others, in every source (issue 32 item 2).

Each source's builder writes a session as its tool writes it on Windows
(``windows=True``: a drive-letter cwd, backslash paths, CRLF where the tool
writes text mode), and each test checks that the session's typed turns
count and nothing else does: precision = recall = 1.0.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import apsw
import pytest

from actors.testing import ImageOnly, Interrupt, Reply, SlashCommand, ToolCall, ToolResult, Typed
from actors.upstream.aider.classify import classify_aider_history
from actors.upstream.aider.kit import AiderChatHistory
from actors.upstream.claude.classify import classify_claude_line
from actors.upstream.claude.kit import ClaudeCodeTranscript
from actors.upstream.claude.source import CLAUDE
from actors.upstream.codex.classify import classify_codex_line
from actors.upstream.codex.kit import CodexRollout
from actors.upstream.codex.meta import codex_project
from actors.upstream.crush.classify import poll_crush
from actors.upstream.crush.kit import CrushTranscript
from actors.upstream.kit.windows import WINDOWS_CWD, WINDOWS_FILE
from actors.upstream.opencode.kit import OpenCodeTranscript
from actors.upstream.opencode.store import classify_db_session
from actors.upstream.pi.classify import classify_pi_line, pi_project
from actors.upstream.pi.kit import PiSession

TYPED = ("first prompt typed on Windows", "second one\nwith two lines")
"""What the person typed in every scenario (the typed turns)."""


def _check(decided: list[tuple[bool, str]]) -> None:
    """Precision = recall = 1.0: the typed units are exactly :data:`TYPED`, normalized."""
    human = [text for is_human, text in decided if is_human]
    assert human == [" ".join(t.split()) for t in TYPED]


# --- Aider --------------------------------------------------------------------------


@pytest.mark.parametrize("command_line", [
    None,  # the launcher's path without .exe
    r"C:\Program Files\Python311\Scripts\aider.exe --model openai/harness-model",
    r"C:\Users\user\AppData\Local\Programs\Python\Python311\Lib\site-packages\aider"
    r"\__main__.py --model x",  # python -m aider
])
def test_aider_session_recorded_on_windows(tmp_path: Path, command_line: str | None) -> None:
    history = AiderChatHistory(tmp_path / ".aider.chat.history.md", windows=True,
                               command_line=command_line)
    history.append(Typed(TYPED[0]), Reply("Sure."),
                   ToolCall("bash", {"command": "dir"}, "c1"), ToolResult("c1", "a.txt"),
                   SlashCommand("model", "gpt"), Interrupt(), Typed(TYPED[1]), Reply("Done."))
    data = history.path.read_bytes()
    assert b"\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")
    decided = [(u.human, u.text or "") for _, u in classify_aider_history(data)]
    _check(decided)
    assert not any(u.reason == "no_command_line" for _, u in classify_aider_history(data))


# --- Claude Code --------------------------------------------------------------------


def test_claude_session_recorded_on_windows(tmp_path: Path) -> None:
    """``%USERPROFILE%\\.claude\\projects\\C--Users-user-work\\<id>.jsonl``; rows carry
    ``cwd: "C:\\Users\\user\\work"``; tool calls name backslash paths."""
    project = tmp_path / ".claude" / "projects" / "C--Users-user-work"
    project.mkdir(parents=True)
    transcript = ClaudeCodeTranscript(project / f"{uuid.uuid4()}.jsonl", windows=True,
                                      entrypoint="cli", prompt_source="typed")
    transcript.append(Typed(TYPED[0]), ToolCall("Read", {"file_path": WINDOWS_FILE}, "t1"),
                      ToolResult("t1", "x = 1"), Reply("Read it."), SlashCommand("model", "opus"),
                      Interrupt(), Typed(TYPED[1]), Reply("Done."))
    data = transcript.path.read_bytes()
    assert b'"cwd":"C:\\\\Users\\\\user\\\\work"' in data
    _check([(u.human, u.text or "") for u in map(classify_claude_line, data.splitlines())])
    found = [c.path for c in CLAUDE.discover(tmp_path / ".claude" / "projects")]
    assert found == [str(transcript.path)]


# --- OpenCode -----------------------------------------------------------------------


def test_opencode_session_recorded_on_windows(tmp_path: Path) -> None:
    """``%USERPROFILE%\\.local\\share\\opencode\\opencode.db``; the session's and the
    assistant's ``directory``/``path.cwd`` are ``C:\\Users\\user\\work``."""
    store = OpenCodeTranscript(tmp_path / "opencode.db", windows=True)
    store.append(Typed(TYPED[0]), ToolCall("read", {"filePath": WINDOWS_FILE}, "c1"),
                 ToolResult("c1", "x = 1"), Reply("Read it."), Interrupt(),
                 SlashCommand("review", ""), Typed(TYPED[1]), Reply("Done."))
    decided = classify_db_session(store.path, store.session_id)
    _check([(u.human, u.text or "") for _, u in decided])
    conn = apsw.Connection(str(store.path))
    try:
        assert conn.execute("SELECT directory FROM session WHERE id = ?",
                            (store.session_id,)).get == WINDOWS_CWD
    finally:
        conn.close()


# --- Codex --------------------------------------------------------------------------


@pytest.mark.parametrize("paginated", [False, True])
def test_codex_session_recorded_on_windows(tmp_path: Path, paginated: bool) -> None:
    """``%USERPROFILE%\\.codex\\sessions\\YYYY\\MM\\DD\\rollout-….jsonl``;
    ``session_meta.cwd`` is ``C:\\Users\\user\\work``."""
    rollout = CodexRollout(tmp_path / f"rollout-2026-12-06T10-00-00-{uuid.uuid4()}.jsonl",
                           windows=True, paginated=paginated)
    rollout.append(Typed(TYPED[0]), Reply("Sure."), SlashCommand("model", "o3"),
                   Typed(TYPED[1]), Reply("Done."))
    if not paginated:
        rollout.append(ToolCall("shell", {"command": ["cmd", "/c", "dir"],
                                          "workdir": WINDOWS_CWD}, "c1"),
                       ToolResult("c1", "a.txt"), Interrupt())
    lines = rollout.path.read_bytes().splitlines()
    _check([(u.human, u.text or "") for u in map(classify_codex_line, lines)])
    assert codex_project(lines[:1]) == WINDOWS_CWD


# --- Pi -----------------------------------------------------------------------------


def test_pi_session_recorded_on_windows(tmp_path: Path) -> None:
    """``%USERPROFILE%\\.pi\\agent\\sessions\\--C--Users-user-work--\\<time>_<id>.jsonl``."""
    folder = tmp_path / "--C--Users-user-work--"
    folder.mkdir()
    session = PiSession(folder / f"2026-12-06T10-00-00-000Z_{uuid.uuid4()}.jsonl",
                        windows=True)
    session.append(Typed(TYPED[0]), ToolCall("read", {"path": WINDOWS_FILE}, "c1"),
                   ToolResult("c1", "x = 1"), Reply("Read it."), Interrupt(),
                   SlashCommand("model", "x"), Typed(TYPED[1]), Reply("Done."))
    lines = session.path.read_bytes().splitlines()
    _check([(u.human, u.text or "") for u in map(classify_pi_line, lines)])
    assert pi_project(lines) == WINDOWS_CWD


# --- Crush --------------------------------------------------------------------------


def test_crush_store_recorded_on_windows(tmp_path: Path) -> None:
    """``<project>\\.crush\\crush.db``: the same rows; attachments name Windows paths."""
    (tmp_path / ".crush").mkdir()
    db = tmp_path / ".crush" / "crush.db"
    with CrushTranscript(db, windows=True) as crush:
        crush.append(Typed(TYPED[0]), ToolCall("view", {"file_path": WINDOWS_FILE}, "c1"),
                     ToolResult("c1", "x = 1"), Reply("Read it."), ImageOnly(1), Interrupt(),
                     Typed(TYPED[1]), Reply("Done."))
    result = poll_crush(db)
    assert result is not None
    _check([(u.human, u.text or "") for _, u in result[0]])


# --- Qwen Code ----------------------------------------------------------------------


def test_qwen_session_recorded_on_windows(tmp_path: Path) -> None:
    """``%USERPROFILE%\\.qwen\\projects\\c--users-user-work\\chats\\<id>.jsonl``: Qwen Code
    lower-cases a Windows working directory for its project folder (``sanitizeCwd``)."""
    from actors.upstream.classify import classify_units
    from actors.upstream.qwen.classify import qwen_project_slug
    from actors.upstream.qwen.kit import QwenSession

    assert qwen_project_slug(WINDOWS_CWD) == "c--users-user-work"
    chats = tmp_path / "projects" / qwen_project_slug(WINDOWS_CWD) / "chats"
    chats.mkdir(parents=True)
    session = QwenSession(chats / f"{uuid.uuid4()}.jsonl", windows=True)
    session.append(Typed(TYPED[0]), Reply("Read it."), SlashCommand("model", "x"),
                   Typed(TYPED[1]), Reply("Done."))
    assert b'"cwd":"C:\\\\Users\\\\user\\\\work"' in session.path.read_bytes()
    decided = list(classify_units("qwen", str(session.path)))
    assert [d["human"] for d in decided].count(True) == len(TYPED)
