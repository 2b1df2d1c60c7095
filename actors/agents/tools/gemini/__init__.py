"""Gemini CLI: command hooks in ``settings.json``; told at the next prompt, no wake.

``BeforeAgent`` (once per submitted prompt) and ``SessionStart`` run ``ssa hook
gemini`` and answer in ``hookSpecificOutput.additionalContext``, which Gemini
CLI 0.61.0 appends to that request as ``<hook_context>…</hook_context>``
(plain text output would only be shown to the person). Hook timeouts are in
milliseconds. Nothing outside can make an idle session take a turn
(``docs/push.md``): a Gemini manager is told at its next prompt.
"""

from __future__ import annotations

from actors.agents.tools.base import AgentTool

__all__ = ["TOOL"]

TOOL = AgentTool(
    name="gemini", source="gemini", default_event="BeforeAgent", json_output=True,
    context_events=("BeforeAgent", "SessionStart"), hook_events=("BeforeAgent", "SessionStart"),
    timeout_unit_ms=True, install="actors.agents.tools.gemini.install")
