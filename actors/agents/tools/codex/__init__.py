"""Codex: command hooks in ``hooks.json``, woken through ``codex queue``.

``UserPromptSubmit`` and ``SessionStart`` run ``ssa hook codex`` and answer in
``hookSpecificOutput.additionalContext``. No Codex hook can start a turn: a
manager's prompt hook starts the waiting hook detached (once per session);
it delivers with ``codex queue --thread ID --message TEXT`` run by the very
binary of the session's Codex process (the message enters as queued input,
which the TUI runs at its next 10 s tick). Mid-turn, an async ``PostToolUse``
hook puts pending notices into the next request. ``codex exec`` is headless.
``Stop`` and ``PermissionRequest`` hooks say where the session stands.
"""

from __future__ import annotations

import os

from actors.agents.activity import ActivityRule
from actors.agents.push import PushPath
from actors.agents.tools.base import AgentTool

__all__ = ["TOOL"]


def _codex_queue(tool_pid: int, session_id: str, text: str) -> list[str]:
    """``codex queue`` run by the very binary of the session's Codex process."""
    return [os.readlink(f"/proc/{tool_pid}/exe"), "queue", "--thread", session_id,
            "--message", text]


TOOL = AgentTool(
    name="codex", source="codex", default_event="UserPromptSubmit", json_output=True,
    context_events=("UserPromptSubmit", "SessionStart", "PostToolUse"),
    notice_line_events=("UserPromptSubmit",),  # systemMessage: shown to the person
    hook_events=("UserPromptSubmit", "SessionStart"),
    install="actors.agents.tools.codex.install",
    push=PushPath(event="Stop", delivery="command", spawn=True, headless=("exec",),
                  mid_turn_event="PostToolUse", mid_turn_fields=(("async", True),),
                  command=_codex_queue),
    activity=(ActivityRule("Stop", "finished", run="ok"),
              ActivityRule("PermissionRequest", "waiting", "permission")),
    activity_fields=(("timeout", 10),))
