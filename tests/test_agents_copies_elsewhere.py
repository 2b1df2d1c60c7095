"""A continued or forked session whose original transcript is in another folder, or
deleted (issue 32, "Done when"): on the real CLIs, the new transcript's copied history
is never typed, the prompt typed there is, and (moved) the original's prompt counts
once, in the moved file: precision = recall = 1.0.

The scenario is :func:`tests.harness.scripted.copy_without_original`, which
``python -m tests.harness.drift`` runs on the newest versions too. Tools that only
append to the session's own file when it goes on (Gemini CLI, Qwen Code ``--resume``,
Aider) copy nothing and are not here. OpenCode's fork is a session of its database:
its original is deleted with ``opencode session delete``
(:func:`tests.harness.scripted.session_copy_without_original`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Harness
from tests.harness.scripted import HOW, copy_without_original, session_copy_without_original
from tests.harness.tools import TOOLS

pytestmark = [pytest.mark.agents, pytest.mark.timeout(240)]

CASES = [(name, variant) for name, profile in TOOLS.items()
         for variant in profile.continuations(Path("/nonexistent/session.jsonl"))]
"""``(tool, variant)`` for every way a CLI goes on with a conversation in a new transcript."""


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize(("tool", "variant"), CASES)
def test_copy_without_its_original_is_not_typed(agent_harness: Harness, require_tool: object,
                                                tool: str, variant: str, how: str) -> None:
    require_tool(tool)  # type: ignore[operator]
    outcome = copy_without_original(agent_harness, tool, how, variant)
    # the fork copied the earlier prompt (Codex 0.171.0's names its original instead)
    assert bool(outcome.copies) == outcome.copied, outcome.report()
    assert outcome.exact, outcome.report()


SESSION_CASES = [(name, variant) for name, profile in TOOLS.items()
                 for variant in profile.session_continuations("ses_x")]
"""``(tool, variant)`` for every way a store CLI goes on with a session in a new one."""


@pytest.mark.parametrize(("tool", "variant"), SESSION_CASES)
def test_session_copy_without_its_original_is_not_typed(
        agent_harness: Harness, require_tool: object, tool: str, variant: str) -> None:
    require_tool(tool)  # type: ignore[operator]
    outcome = session_copy_without_original(agent_harness, tool, variant)
    assert bool(outcome.copies) == outcome.copied, outcome.report()
    assert outcome.exact, outcome.report()
