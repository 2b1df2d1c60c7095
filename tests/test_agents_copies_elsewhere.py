"""A continued or forked session whose original transcript is in another folder, or
deleted (issue 32, "Done when"): on the real CLIs, the new transcript's copied history
is never typed, the prompt typed there is, and (moved) the original's prompt counts
once, in the moved file: precision = recall = 1.0.

The scenario is :func:`tests.harness.scripted.copy_without_original`, which
``python -m tests.harness.drift`` runs on the newest versions too. Tools that only
append to the session's own file when it goes on (Gemini CLI, Qwen Code ``--resume``,
Aider) copy nothing and are not here; OpenCode's fork lives in its database
(``tests/test_agents_opencode_copies.py``).
"""

from __future__ import annotations

import pytest

from tests.harness import Harness
from tests.harness.scripted import HOW, copy_without_original

pytestmark = [pytest.mark.agents, pytest.mark.timeout(240)]

TOOLS = ("claude", "codex", "pi")
"""The CLIs whose continuation writes a new transcript that copies the earlier one."""


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("tool", TOOLS)
def test_copy_without_its_original_is_not_typed(agent_harness: Harness, require_tool: object,
                                                tool: str, how: str) -> None:
    require_tool(tool)  # type: ignore[operator]
    outcome = copy_without_original(agent_harness, tool, how)
    # the fork copied the earlier prompt (Codex 0.171.0's names its original instead)
    assert bool(outcome.copies) == outcome.copied, outcome.report()
    assert outcome.exact, outcome.report()
