"""Qwen Code: command hooks in ``settings.json``, woken through its cross-session socket.

``UserPromptSubmit`` (at each prompt, and again before each request that
follows a tool result: mid-turn) and ``SessionStart`` run ``ssa hook qwen``
and answer in ``hookSpecificOutput.additionalContext``; hook timeouts are in
seconds. Its hooks cannot start a turn, but Qwen Code 0.24.4 listens on a
per-session messaging socket and gives its child processes the socket and a
token (``QWEN_CODE_MESSAGING_SOCKET``, ``QWEN_CODE_MESSAGING_TOKEN``): the
prompt hook starts the waiting hook detached (for workers too, so sends
reach them), and it delivers by writing one message frame to that socket
(:mod:`actors.agents.tools.qwen.peer`). Qwen Code records such a message as a
``notification`` row from the system, never typed. A person can turn the
socket off (``agents.crossSessionMessaging: false``) or hold messages
(``agents.crossSessionInbound``); then the command fails and the notice
waits for the next prompt.
"""

from __future__ import annotations

import sys

from actors.agents.push import PushPath
from actors.agents.tools.base import AgentTool

__all__ = ["TOOL"]


def _peer(tool_pid: int, session_id: str, text: str) -> list[str]:
    """Our sender of one message frame; the text goes on its stdin."""
    del tool_pid, session_id, text
    return [sys.executable, "-m", "actors.agents.tools.qwen.peer"]


TOOL = AgentTool(
    name="qwen", source="qwen", default_event="UserPromptSubmit", json_output=True,
    context_events=("UserPromptSubmit", "SessionStart"),
    hook_events=("UserPromptSubmit", "SessionStart"),
    install="actors.agents.tools.qwen.install",
    push=PushPath(event="Stop", delivery="command", spawn=True, spawn_for_workers=True,
                  inbox_sends=True, command=_peer))
