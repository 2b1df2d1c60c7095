"""The prompt Qwen Code sends for the person when they run ``/init``.

Qwen Code's ``/init`` (``packages/cli/src/ui/commands/initCommand.ts``; in the
0.24.4 bundle ``chunks/chunk-KYFJLESB.js``, the command ``name: "init"``)
creates an empty context file and returns ``{type: "submit_prompt", content}``:
the CLI sends ``content`` as an ordinary user record (``provenance:
"real_user"``, no ``displayText``), right after the ``system`` /
``slash_command`` records of the invocation. The person typed ``/init``; the
words are Qwen Code's (``tool_prompt``). The command takes no arguments.

* 0.24.4: "You are Qwen Code, an interactive CLI agent. Analyze the current
  directory and generate a comprehensive ${contextFileName} file to be used as
  instructional context for future interactions." and the analysis steps; the
  file name (``QWEN.md`` or the configured one) is :data:`FILL`, everything
  after the fixed opening :data:`REST`. Seen on the real 0.24.4 CLI by
  ``tests/test_agents_fixed_prompts.py``.

Data only.
"""

from __future__ import annotations

from typing import Final

from actors.upstream.fixed_prompts import FILL, REST, FixedPrompt, FixedPrompts

__all__ = ["QWEN_PROMPTS"]

QWEN_PROMPTS: Final = FixedPrompts((
    FixedPrompt(
        action="/init",
        origin="packages/cli/src/ui/commands/initCommand.ts@0.24.4 (chunks/chunk-KYFJLESB.js)",
        text="\n".join((
            "",
            "You are Qwen Code, an interactive CLI agent. Analyze the current directory and"
            f" generate a comprehensive {FILL} file to be used as instructional context for"
            " future interactions.",
            "",
            "**Analysis Process:**",
            "",
            REST,
        ))),
))
"""Qwen Code's fixed prompts (see the module docstring)."""
