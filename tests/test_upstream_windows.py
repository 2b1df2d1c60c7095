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

from actors.testing import Interrupt, Reply, SlashCommand, ToolCall, ToolResult, Typed
from actors.upstream.aider.classify import classify_aider_history
from actors.upstream.aider.kit import AiderChatHistory
from actors.upstream.claude.classify import classify_claude_line
from actors.upstream.claude.kit import ClaudeCodeTranscript
from actors.upstream.claude.source import CLAUDE
from actors.upstream.opencode.kit import WINDOWS_DIRECTORY, OpenCodeTranscript
from actors.upstream.opencode.store import classify_db_session

TYPED = ("first prompt typed on Windows", "second one\nwith two lines")
"""What the person typed in every scenario (the typed turns)."""

WIN_FILE = "C:\\Users\\user\\work\\src\\app.py"
"""A file a tool call names, as a Windows path."""


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
    transcript.append(Typed(TYPED[0]), ToolCall("Read", {"file_path": WIN_FILE}, "t1"),
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
    store.append(Typed(TYPED[0]), ToolCall("read", {"filePath": WIN_FILE}, "c1"),
                 ToolResult("c1", "x = 1"), Reply("Read it."), Interrupt(),
                 SlashCommand("review", ""), Typed(TYPED[1]), Reply("Done."))
    decided = classify_db_session(store.path, store.session_id)
    _check([(u.human, u.text or "") for _, u in decided])
    conn = apsw.Connection(str(store.path))
    try:
        assert conn.execute("SELECT directory FROM session WHERE id = ?",
                            (store.session_id,)).get == WINDOWS_DIRECTORY
    finally:
        conn.close()
