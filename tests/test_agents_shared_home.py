"""Two real tools sharing one HOME and project (a manager and a worker), each with its
own fake model server: each one's typed prompts are decided typed, in its own transcript."""

from __future__ import annotations

import secrets

import pytest

from tests.harness import Harness, Text, compare

pytestmark = [pytest.mark.agents, pytest.mark.timeout(180)]


def test_claude_manager_and_codex_worker_share_a_home(
        agent_harness: Harness, require_tool: object) -> None:
    for tool in ("claude", "codex"):
        require_tool(tool)  # type: ignore[operator]
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    manager = agent_harness.start("claude", name="manager", home=home, project=project)
    worker = agent_harness.start("codex", name="worker", home=home, project=project)
    assert manager.model is not worker.model

    worker.script(Text(f"worker answer {nonce}"))
    worker.prompt(f"worker prompt {nonce}")
    manager.script(Text(f"manager answer {nonce}"))
    manager.prompt(f"manager prompt {nonce}")
    assert not any(r.has_text(f"worker prompt {nonce}") for r in manager.model.requests)

    for agent in (manager, worker):
        result = compare(agent.decided_rows(), agent_harness.log.actions(agent=agent.name))
        assert (result.precision, result.recall) == (1.0, 1.0), result.report()
        assert len(result.true_positives) == 1, result.report()
