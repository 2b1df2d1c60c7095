"""Codex 0.171.0 end to end: the real TUI in tmux against the fake Responses server.

What the harness did (the action log) is the ground truth for how
``ssa classify``'s code path decides every row the real tool wrote.
"""

from __future__ import annotations

import secrets

import pytest

from tests.harness import Codex, Harness, Text, compare
from tests.harness.scenarios import typed_prompts_and_a_shell_call

pytestmark = [pytest.mark.agents, pytest.mark.timeout(180)]


@pytest.fixture(autouse=True)
def _codex(require_tool: object) -> None:
    require_tool("codex")  # type: ignore[operator]


def test_typed_prompts_and_a_shell_call_decide_typed_exactly(agent_harness: Harness) -> None:
    codex = typed_prompts_and_a_shell_call(agent_harness, "codex")
    # Codex asks for a title per prompt: side requests, which never took a scripted answer.
    assert all(not r.scripted for r in codex.model.requests if r.kind == "side")


def test_exec_run_is_not_monitored(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    model = agent_harness.model("responses")
    model.script(Text(f"exec answer {nonce}"))
    run = agent_harness.run_program("codex", f"headless prompt {nonce}", model=model)
    assert run.returncode == 0, run.stderr
    assert f"exec answer {nonce}" in run.stdout
    rows = [r for p in Codex().transcripts(agent_harness.home()) for r in Codex().decide(p)]
    result = compare(rows, agent_harness.log.actions())
    prompt_rows = result.rows_of(run.action)
    assert prompt_rows, result.report()
    assert not any(r.human for r in prompt_rows), result.report()
    # codex exec threads get no upstream link: every row is "not_monitored".
    assert all(r.reason.startswith("not_monitored") for r in rows), result.report()
    assert result.precision == 1.0, result.report()


def test_implementing_a_plan_from_the_popup_is_a_click(agent_harness: Harness) -> None:
    """Plan mode: the popup's "Yes, implement this plan" submits Codex's fixed text."""
    nonce = secrets.token_hex(4)
    codex = agent_harness.start("codex")
    codex.slash("/plan")
    codex.script(Text(f"Here is the plan.\n<proposed_plan>\n# Plan {nonce}\n- step one\n"
                      "</proposed_plan>\n"))
    codex.type(f"make a plan {nonce}")
    codex.pane.wait_screen(lambda s: "Implement this plan?" in s, codex.tool.turn_timeout_s,
                           "the plan popup")
    codex.script(Text(f"implemented {nonce}"))
    codex.keys("Enter")  # 1. Yes, implement this plan
    agent_harness.log.record(codex.name, "codex", "plan_choice", "Implement the plan.",
                             choice="Yes, implement this plan")
    codex.wait_turn()

    rows = codex.decided_rows()
    result = compare(rows, agent_harness.log.actions(agent=codex.name))
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 1, result.report()
    clicked = [r for r in result.rows_of(result.actions[-1])
               if r.kind == "event_msg:item_completed"]
    assert [r.reason for r in clicked] == ["plan_implementation"], result.report()
