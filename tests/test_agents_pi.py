"""Pi 0.73.1 end to end: the real TUI in tmux against the fake Chat Completions server.

What the harness did (the action log) is the ground truth for how
``ssa classify``'s code path decides every row the real tool wrote.
"""

from __future__ import annotations

import secrets

import pytest

from tests.harness import DecidedRow, Harness, Pi, Text, compare
from tests.harness.scenarios import typed_prompts_and_a_shell_call

pytestmark = [pytest.mark.agents, pytest.mark.timeout(180)]


@pytest.fixture(autouse=True)
def _pi(require_tool: object) -> None:
    require_tool("pi")  # type: ignore[operator]


def test_typed_prompts_and_a_shell_call_decide_typed_exactly(agent_harness: Harness) -> None:
    typed_prompts_and_a_shell_call(agent_harness, "pi")


@pytest.fixture
def print_mode_rows(agent_harness: Harness) -> list[DecidedRow]:
    """Run ``pi -p`` once; the decided rows that hold its prompt (exactly one user row).

    Its checks fail as errors, outside the xfail of the test that uses it.
    """
    nonce = secrets.token_hex(4)
    model = agent_harness.model("chat")
    model.script(Text(f"print answer {nonce}"))
    run = agent_harness.run_program("pi", f"headless prompt {nonce}", model=model)
    assert run.returncode == 0, run.stderr
    assert f"print answer {nonce}" in run.stdout
    rows = [r for p in Pi().transcripts(agent_harness.home()) for r in Pi().decide(p)]
    result = compare(rows, agent_harness.log.actions())
    prompt_rows = result.rows_of(run.action)
    assert [r.kind for r in prompt_rows] == ["message:user"], result.report()
    return prompt_rows


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "Pi stores no provenance: Pi 0.73.1 writes a print-mode (pi -p) session exactly as a "
    "TUI one (header, model_change, thinking_level_change, then the same user message "
    "entry; compared field by field under the harness), and the input's source "
    "(interactive / rpc / extension, InputEvent.source) reaches extensions only, never "
    "the session file, so no row proves the run was program-driven (docs/upstream-rows.md). "
    "Strict: this turns into a failure once the classifier can tell them apart."))
def test_print_mode_prompt_is_not_typed(print_mode_rows: list[DecidedRow]) -> None:
    assert not any(r.human for r in print_mode_rows), [
        (r.unit, r.reason) for r in print_mode_rows]
