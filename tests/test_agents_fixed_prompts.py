"""Each fixed prompt a command or click makes the real CLI send (issue 32, "Done when"):
``/init`` and the like, chosen in the TUI as a person does, is decided not typed
(``tool_prompt`` or the tool's own mark), while the prompts typed around it are:
precision = recall = 1.0.

The commands are each profile's ``fixed_prompts``; the scenario is
:func:`tests.harness.scripted.fixed_prompt`, which ``python -m tests.harness.drift``
runs on the newest versions too.
"""

from __future__ import annotations

import pytest

from tests.harness import Harness
from tests.harness.scripted import fixed_prompt
from tests.harness.tools import TOOLS

pytestmark = [pytest.mark.agents, pytest.mark.timeout(240)]

CASES = [(name, command) for name, profile in TOOLS.items() for command in profile.fixed_prompts]
"""``(tool, command)`` for every fixed prompt a profile lists."""


@pytest.mark.parametrize(("tool", "command"), CASES)
def test_fixed_prompt_is_not_typed(agent_harness: Harness, require_tool: object, tool: str,
                                   command: str) -> None:
    require_tool(tool)  # type: ignore[operator]
    outcome = fixed_prompt(agent_harness, tool, command)
    assert outcome.copies, outcome.report()  # the tool sent its prompt
    assert outcome.exact, outcome.report()
