"""Qwen Code 0.24.4 end to end: the real TUI in tmux against the fake Chat Completions server.

What the harness did (the action log) is the ground truth for how
:mod:`actors.upstream.qwen` decides every row the real tool wrote.
"""

from __future__ import annotations

import secrets

import pytest

from tests.harness import Harness, QwenCode, Text, compare
from tests.harness.scenarios import typed_prompts_and_a_shell_call

pytestmark = [pytest.mark.agents, pytest.mark.timeout(300)]


@pytest.fixture(autouse=True)
def _qwen(require_tool: object) -> None:
    require_tool("qwen")  # type: ignore[operator]


def test_typed_prompts_and_a_shell_call_decide_typed_exactly(agent_harness: Harness) -> None:
    typed_prompts_and_a_shell_call(agent_harness, "qwen")


def test_slash_compress_continue(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    qwen = agent_harness.start("qwen")
    qwen.script(Text(f"first answer {nonce}"))
    qwen.prompt(f"typed one {nonce}")
    qwen.slash("/about")
    qwen.wait_idle()
    qwen.compact("/compress")
    qwen.script(Text(f"after compress answer {nonce}"))
    qwen.prompt(f"after compress {nonce}")
    continued = agent_harness.reopen(qwen, "continue", ["--continue"])
    continued.script(Text(f"continued answer {nonce}"))
    continued.prompt(f"in the continued session {nonce}")
    assert not continued.model.problems

    assert len(continued.transcripts()) == 1  # --continue appends to the session's own file
    result = compare(continued.decided_rows(), agent_harness.log.actions(tool="qwen"))
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 3, result.report()
    kinds = {(r.kind, r.reason) for r in result.rows}
    assert ("system:slash_command", "system:slash_command") in kinds, result.report()
    assert not any(r.reason == "unknown_kind" for r in result.rows), result.report()


def test_print_mode_is_not_monitored(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    model = agent_harness.model("chat")
    model.script(Text(f"print answer {nonce}"))
    run = agent_harness.run_program("qwen", f"headless prompt {nonce}", model=model, home=home)
    assert run.returncode == 0, run.stderr
    assert f"print answer {nonce}" in run.stdout
    rows = [r for p in QwenCode().transcripts(home) for r in QwenCode().decide(p)]
    result = compare(rows, agent_harness.log.actions())
    prompt_rows = result.rows_of(run.action)
    assert [r.kind for r in prompt_rows] == ["user"], result.report()
    assert prompt_rows[0].reason == "not_monitored: program_driven (typed)", result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
