"""Pi: our extension (``extension.ts`` beside this module) runs the hooks and injects wakes.

The extension runs ``ssa hook pi`` before each agent run
(``before_agent_start``) and returns what it printed as a custom message.
For wakes it keeps one waiting hook for the session and sends each notice
with ``pi.sendMessage`` (``triggerTurn``; ``steer`` while busy), a custom
message never counted as typed. ``pi -p`` is headless.
"""

from __future__ import annotations

from actors.agents.push import PUSH_EVENT, PushPath
from actors.agents.tools.base import AgentTool

__all__ = ["TOOL"]

TOOL = AgentTool(
    name="pi", source="pi", default_event="before_agent_start", json_output=False,
    install="actors.agents.tools.pi.install", mcp=False,
    push=PushPath(event=PUSH_EVENT, delivery="stream", headless=("-p", "--print")))
