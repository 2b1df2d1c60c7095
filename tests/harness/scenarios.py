"""Scenarios every tool's suite runs the same way (each assertion names what broke).

Test code, not a test: call it from a test with the ``agent_harness`` fixture.
"""

from __future__ import annotations

import secrets

from tests.harness.agent import Agent
from tests.harness.compare import compare
from tests.harness.script import Text
from tests.harness.session import Harness

__all__ = ["typed_prompts_and_a_shell_call"]


def typed_prompts_and_a_shell_call(harness: Harness, tool: str) -> Agent:
    """Two typed prompts, the second answered with a shell call; every row decided exactly.

    Checks that the command's output went back to the model, that the fake
    server saw no problem, and that ``ssa classify``'s code path decides the
    tool's transcript as the action log says: precision = recall = 1.0, two
    typed rows, and no row of the shell call typed. Returns the agent for
    the caller's tool-specific checks. Blocks for the two turns (their
    timeouts are the harness's).

    Raises:
        AssertionError: a check failed (with the comparison's report).
        TimeoutError: a turn did not complete.
    """
    nonce = secrets.token_hex(4)
    agent = harness.start(tool)
    agent.script(Text(f"first answer {nonce}"))
    first = agent.prompt(f"hello one {nonce}")
    assert first.has_text(f"hello one {nonce}")
    agent.script_shell(f"echo shell-marker-{nonce}", then=f"done {nonce}")
    agent.prompt(f"please run the command {nonce}")
    follow_up = agent.model.wait_main(3)
    assert follow_up.has_text(f"shell-marker-{nonce}")  # the command's output came back
    assert not agent.model.problems

    result = compare(agent.decided_rows(), harness.log.actions(agent=agent.name))
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 2, result.report()
    shell_rows = result.rows_of(next(a for a in result.actions if a.kind == "shell_call"))
    assert shell_rows, result.report()
    assert not any(r.human for r in shell_rows), result.report()
    return agent
