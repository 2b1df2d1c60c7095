"""Codex 0.169.0 ``codex queue``: a message another program queues for a running session.

``codex queue --thread ID --message TEXT`` stores the message in
``$CODEX_HOME/queue_1.sqlite`` (``queued_items``) and prints ``Queued message <id>
for thread <id>.``; the running TUI picks it up within seconds (no daemon needed)
and runs a turn on it, then deletes the queue row. The action log records it as a
``program_run``: no person typed it.
"""

from __future__ import annotations

import json
import secrets
import subprocess

import pytest

from tests.harness import Harness, Text, compare
from tests.harness import actions as act

pytestmark = [pytest.mark.agents, pytest.mark.timeout(180)]


@pytest.fixture(autouse=True)
def _codex(require_tool: object) -> None:
    require_tool("codex")  # type: ignore[operator]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "issue 22, class 4, on Codex 0.169.0: a codex queue message is written exactly as a "
    "typed prompt (an item_completed UserMessage with content_item_metadata provenance "
    "'user' on its response_item, no <external_message> wrapper, no marker but a "
    "client_id, as typed prompts have), and the queue row is deleted once delivered, so "
    "it is decided typed. Strict: passes once the classifier can tell them apart."))
def test_a_queued_message_is_not_typed(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    codex = agent_harness.start("codex", home=home)
    codex.script(Text(f"answer {nonce}"))
    codex.prompt(f"typed one {nonce}")
    (path,) = codex.transcripts()
    thread = json.loads(path.read_text().splitlines()[0])["payload"]["id"]

    text = f"queued by a program {nonce}"
    codex.script(Text(f"queued answer {nonce}"))
    argv = [str(agent_harness.install.binary("codex")), "queue", "--thread", thread,
            "--message", text]
    agent_harness.log.record("codex-queue", "codex", act.PROGRAM_RUN, text, argv=argv)
    done = subprocess.run(argv, env=codex.tool.env(home, codex.model, agent_harness.install),
                          cwd=codex.project, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert f"for thread {thread}" in done.stdout, done.stdout
    codex.wait_request(text)
    codex.wait_turn()

    result = compare(codex.decided_rows(), agent_harness.log.actions(tool="codex"))
    assert not result.unseen, result.report()
    assert len(result.true_positives) == 1, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
