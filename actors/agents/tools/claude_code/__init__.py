"""Claude Code: command hooks in ``settings.json`` (or a plugin), woken by an async Stop hook.

``UserPromptSubmit`` and ``SessionStart`` run ``ssa hook claude-code`` and
answer in ``hookSpecificOutput.additionalContext``. The waiting hook is a
``Stop`` command hook with ``"asyncRewake": true``: it runs in the background
once a turn ends; when it exits 2, Claude Code shows its stderr to the model
as a system notification and starts a turn, even when the session is idle (a
busy one gets it before its next model request). It is armed again at the
end of that turn. ``claude -p`` waits for its async hooks: there the waiting
hook delivers what is pending and never waits (``docs/push.md``). Async
``Stop``, ``StopFailure``, ``Notification`` (``permission_prompt``,
``idle_prompt``) and ``SessionEnd`` hooks say where the session stands.
"""

from __future__ import annotations

from actors.agents.activity import ActivityRule
from actors.agents.push import WAIT_TIMEOUT_S, PushPath
from actors.agents.tools.base import AgentTool

__all__ = ["TOOL"]

TOOL = AgentTool(
    name="claude-code", source="claude", default_event="UserPromptSubmit", json_output=True,
    context_events=("UserPromptSubmit", "SessionStart", "PostToolUse"),
    notice_line_events=("UserPromptSubmit",),  # systemMessage: shown to the person
    hook_events=("UserPromptSubmit", "SessionStart"),
    install="actors.agents.tools.claude_code.install", plugin_dir=True,
    push=PushPath(event="Stop", delivery="exit", exit_code=2, hook_event="Stop",
                  hook_fields=(("asyncRewake", True), ("timeout", WAIT_TIMEOUT_S)),
                  headless=("-p", "--print")),
    activity=(ActivityRule("Stop", "finished", run="ok"),
              ActivityRule("StopFailure", "failed", "error", run="error"),
              ActivityRule("Notification:permission_prompt", "waiting", "permission"),
              ActivityRule("Notification:idle_prompt", "waiting", "input"),
              ActivityRule("SessionEnd", "finished", "ended")),
    activity_fields=(("async", True), ("timeout", 30)))
