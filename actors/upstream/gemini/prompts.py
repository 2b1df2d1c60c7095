"""The prompt Gemini CLI sends for the person when they run ``/init``.

Gemini CLI's ``/init`` (``packages/cli/src/ui/commands/initCommand.ts``, later
``packages/core/src/commands/init.ts`` ``performInit``; in the 0.61.0 bundle
``bundle/chunk-5FZXKDXH.js``) returns ``{type: "submit_prompt", content}``, and
the CLI sends ``content`` as the person's turn. From 0.28 the row carries
``displayContent: "/init"`` and is decided by that (``custom_command``); a
session document of 0.20 to 0.27 holds only the text. The person typed
``/init``; the words are Gemini CLI's (``tool_prompt``). The command takes no
arguments.

* The text opens with the same sentence in every version seen (0.20 to 0.61,
  and a later variant that adds a scaffold of the project: "I've already done a
  quick scan…"); only that opening is compared exactly, the rest is
  :data:`REST`. Seen on the real 0.61.0 CLI by ``tests/test_agents_fixed_prompts.py``.

Data only.
"""

from __future__ import annotations

from typing import Final

from actors.upstream.fixed_prompts import REST, FixedPrompt, FixedPrompts

__all__ = ["GEMINI_PROMPTS"]

GEMINI_PROMPTS: Final = FixedPrompts((
    FixedPrompt(
        action="/init",
        origin="packages/core/src/commands/init.ts performInit@0.20..0.61 (0.61.0 bundle)",
        text="\n".join((
            "You are an AI agent that brings the power of Gemini directly into the terminal."
            " Your task is to analyze the current directory and generate a comprehensive"
            " GEMINI.md file to be used as instructional context for future interactions.",
            "",
            REST,
        ))),
))
"""Gemini CLI's fixed prompts (see the module docstring)."""
