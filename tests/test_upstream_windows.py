"""Sessions recorded on Windows are read like the others, in every source (issue 32 item 2).

Each source's builder writes a session as its tool writes it on Windows
(``windows=True``: a drive-letter cwd, backslash paths, CRLF where the tool
writes text mode), and each test checks that the session's typed turns
count and nothing else does: precision = recall = 1.0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.testing import Interrupt, Reply, SlashCommand, ToolCall, ToolResult, Typed
from actors.upstream.aider.classify import classify_aider_history
from actors.upstream.aider.kit import AiderChatHistory

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
