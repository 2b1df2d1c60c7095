"""A Windows-recorded session of every source, built by the test kit and compared with
an action log (issue 32, "Done when": a Windows-recorded session built by the kit).

Each source's builder (``actors/upstream/<source>/kit.py`` with ``windows=True``:
a drive-letter working directory, backslash paths, ``\\r\\n`` where the tool writes
text mode) writes two typed prompts, a tool call running a shell command with its
result, and a slash command; the harness fills an :class:`~tests.harness.actions.ActionLog`
from what the kit wrote, decides every unit through ``ssa classify``'s code path
(the harness profiles' :meth:`~tests.harness.tools.AgentTool.decide`; Crush through
:func:`~actors.upstream.classify.classify_units`), and compares (:func:`compare`).

No CLI runs: this is a plain test's (``tests/test_harness_windows_kit.py``) and the
drift script prints it too. Blocks on file and SQLite I/O only.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.testing import Reply, SlashCommand, ToolCall, ToolResult, Typed
from actors.upstream.classify import classify_units
from actors.upstream.kit.windows import WINDOWS_CWD
from tests.harness import actions as act
from tests.harness.actions import ActionLog
from tests.harness.compare import Comparison, compare
from tests.harness.tools import DecidedRow, string_values, tool_named

__all__ = ["SOURCES", "windows_session"]


def _call(source: str, command: str) -> ToolCall:
    """The shell tool call ``source``'s tool makes on Windows to run ``command``."""
    if source == "claude":
        return ToolCall("Bash", {"command": command, "description": "list"}, "c1")
    if source == "codex":
        return ToolCall("shell", {"command": ["cmd", "/c", command], "workdir": WINDOWS_CWD},
                        "c1")
    if source == "qwen":
        return ToolCall("run_shell_command", {"command": command}, "c1")
    return ToolCall("bash", {"command": command}, "c1")


def _jsonl(source: str, path: Path) -> list[DecidedRow]:
    profile = tool_named(source)
    return profile.decide(path)


def _claude(root: Path, turns: list[Any]) -> list[DecidedRow]:
    from actors.upstream.claude.kit import ClaudeCodeTranscript
    folder = root / ".claude" / "projects" / "C--Users-user-work"
    folder.mkdir(parents=True)
    kit = ClaudeCodeTranscript(folder / f"{uuid.uuid4()}.jsonl", windows=True,
                               entrypoint="cli", prompt_source="typed")
    kit.append(*turns)
    return _jsonl("claude", kit.path)


def _codex(root: Path, turns: list[Any]) -> list[DecidedRow]:
    from actors.upstream.codex.kit import CodexRollout
    folder = root / ".codex" / "sessions" / "2026" / "12" / "07"
    folder.mkdir(parents=True)
    kit = CodexRollout(folder / f"rollout-2026-12-07T10-00-00-{uuid.uuid4()}.jsonl",
                       windows=True)
    kit.append(*turns)
    return _jsonl("codex", kit.path)


def _pi(root: Path, turns: list[Any]) -> list[DecidedRow]:
    from actors.upstream.pi.kit import PiSession
    folder = root / ".pi" / "agent" / "sessions" / "--C--Users-user-work--"
    folder.mkdir(parents=True)
    kit = PiSession(folder / f"2026-12-07T10-00-00-000Z_{uuid.uuid4()}.jsonl", windows=True)
    kit.append(*turns)
    return _jsonl("pi", kit.path)


def _qwen(root: Path, turns: list[Any]) -> list[DecidedRow]:
    from actors.upstream.qwen.classify import qwen_project_slug
    from actors.upstream.qwen.kit import QwenSession
    folder = root / ".qwen" / "projects" / qwen_project_slug(WINDOWS_CWD) / "chats"
    folder.mkdir(parents=True)
    kit = QwenSession(folder / f"{uuid.uuid4()}.jsonl", windows=True)
    kit.append(*turns)
    return _jsonl("qwen", kit.path)


def _aider(root: Path, turns: list[Any]) -> list[DecidedRow]:
    from actors.upstream.aider.kit import AiderChatHistory
    kit = AiderChatHistory(root / ".aider.chat.history.md", windows=True)
    for turn in turns:
        kit.append(turn)
        if isinstance(turn, SlashCommand):  # Aider announces the new model ("> " lines)
            kit.append(ToolResult("model", f"Main model: {turn.args} with whole edit format"))
    return _jsonl("aider", kit.path)


def _opencode(root: Path, turns: list[Any]) -> list[DecidedRow]:
    from actors.upstream.opencode.kit import OpenCodeTranscript
    kit = OpenCodeTranscript(root / "opencode.db", windows=True)
    kit.append(*turns)
    return _jsonl("opencode", kit.path)


def _crush(root: Path, turns: list[Any]) -> list[DecidedRow]:
    import apsw

    from actors.upstream.crush.kit import CrushTranscript
    (root / ".crush").mkdir()
    db = root / ".crush" / "crush.db"
    with CrushTranscript(db, windows=True) as kit:
        kit.append(*turns)
        session = kit.session_id
    conn = apsw.Connection(f"file:{db}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY
                           | apsw.SQLITE_OPEN_URI)
    try:
        texts = {str(i): (str(role), tuple(string_values(json.loads(parts))))
                 for i, role, parts in conn.execute(
                     "SELECT id, role, parts FROM messages WHERE session_id = ?", (session,))}
    finally:
        conn.close()
    out: list[DecidedRow] = []
    for unit in classify_units("crush", str(db), session=session):
        role, strings = texts.get(str(unit["message"]), ("?", ()))
        out.append(DecidedRow("crush", db, str(unit["message"]), session, bool(unit["human"]),
                              str(unit["reason"]), f"message:{role}", strings))
    return out


SOURCES: dict[str, Callable[[Path, list[Any]], list[DecidedRow]]] = {
    "aider": _aider, "claude": _claude, "codex": _codex, "crush": _crush,
    "opencode": _opencode, "pi": _pi, "qwen": _qwen}
"""Every source whose kit writes a Windows-recorded session -> its builder and reader
(Gemini CLI's kit has no ``windows`` option: its files hold no working directory)."""


def windows_session(source: str, root: Path) -> Comparison:
    """Build a Windows-recorded session of ``source`` under ``root`` (a new, empty
    directory), decide it, and compare it with the action log filled from what the kit
    wrote: two typed prompts (``human``), a shell tool call and its result (text: the
    command), a slash command (``/model``, no text of its own in every store).

    Raises:
        KeyError: ``source`` is not in :data:`SOURCES`.
        OSError, apsw.Error: the session cannot be written or read.
    """
    build = SOURCES[source]
    nonce = secrets.token_hex(4)
    log = ActionLog()
    first, second = f"first prompt typed on Windows {nonce}", f"second one {nonce}"
    command = f"dir C:\\Users\\user\\work shell-marker-{nonce}"
    turns: list[Any] = [Typed(first), _call(source, command), ToolResult("c1", "a.txt"),
                        Reply(f"listed {nonce}"), SlashCommand("model", "x"), Typed(second),
                        Reply(f"done {nonce}")]
    log.record("kit", source, act.TYPED, first, human=True)
    log.record("kit", source, act.SHELL_CALL, f"shell-marker-{nonce}")
    log.record("kit", source, act.SLASH, None, command="/model")
    log.record("kit", source, act.TYPED, second, human=True)
    root.mkdir(parents=True, exist_ok=True)
    return compare(build(root, turns), log.actions())
