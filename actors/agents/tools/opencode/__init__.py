"""OpenCode: our plugin (``plugin.js`` beside this module) runs the hooks and injects wakes.

The plugin runs ``ssa hook opencode`` at each top-level prompt
(``chat.message``) and adds what it printed to every model request of the
turn (``experimental.chat.system.transform``). For wakes it keeps one waiting
hook per session and sends each notice with ``session.promptAsync`` as a
synthetic part (never counted as typed). ``opencode run`` is headless.
"""

from __future__ import annotations

from actors.agents.push import PUSH_EVENT, PushPath
from actors.agents.tools.base import AgentTool

__all__ = ["TOOL"]

TOOL = AgentTool(
    name="opencode", source="opencode", default_event="experimental.chat.system.transform",
    json_output=False, install="actors.agents.tools.opencode.install",
    push=PushPath(event=PUSH_EVENT, delivery="stream", headless=("run",)))
