"""OpenCode 1.18.33 end to end: the real TUI in tmux against the fake Chat Completions server.

What the harness did (the action log) is the ground truth for how
``ssa classify``'s code path decides every row the real tool wrote.
"""

from __future__ import annotations

import secrets

import pytest

from tests.harness import Harness, OpenCode, Text, compare
from tests.harness.scenarios import typed_prompts_and_a_shell_call

pytestmark = [pytest.mark.agents, pytest.mark.timeout(300)]  # OpenCode starts slowly


@pytest.fixture(autouse=True)
def _opencode(require_tool: object) -> None:
    require_tool("opencode")  # type: ignore[operator]


def test_typed_prompts_and_a_shell_call_decide_typed_exactly(agent_harness: Harness) -> None:
    opencode = typed_prompts_and_a_shell_call(agent_harness, "opencode")
    # OpenCode's title agent asks once: a side request, which never took a scripted answer.
    assert all(not r.scripted for r in opencode.model.requests if r.kind == "side")


def test_run_session_is_not_typed(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    model = agent_harness.model("chat")
    model.script(Text(f"run answer {nonce}"))
    run = agent_harness.run_program("opencode", f"headless prompt {nonce}", model=model)
    assert run.returncode == 0, run.stderr
    assert f"run answer {nonce}" in run.stdout
    rows = [r for p in OpenCode().transcripts(agent_harness.home()) for r in OpenCode().decide(p)]
    result = compare(rows, agent_harness.log.actions())
    prompt_rows = result.rows_of(run.action)
    assert prompt_rows, result.report()
    assert not any(r.human for r in prompt_rows), result.report()
    # A session "opencode run" created (its permission ruleset denies "question") is a
    # program's: its user message is decided "program_session".
    assert [r.reason for r in prompt_rows if r.kind == "message:user"] == ["program_session"], (
        result.report())
    assert result.precision == 1.0, result.report()
