"""Pi 0.73.1 end to end: the real TUI in tmux against the fake Chat Completions server.

What the harness did (the action log) is the ground truth for how
``ssa classify``'s code path decides every row the real tool wrote.
"""

from __future__ import annotations

import secrets
from functools import partial

import pytest

from tests.harness import DecidedRow, Harness, Pi, Text, compare
from tests.harness.scenarios import typed_prompts_and_a_shell_call
from tests.harness.ssa_install import ssa_install

pytestmark = [pytest.mark.agents, pytest.mark.timeout(180)]


@pytest.fixture(autouse=True)
def _pi(require_tool: object) -> None:
    require_tool("pi")  # type: ignore[operator]


def test_typed_prompts_and_a_shell_call_decide_typed_exactly(agent_harness: Harness) -> None:
    typed_prompts_and_a_shell_call(agent_harness, "pi")


def _print_mode_rows(agent_harness: Harness, *, extension: bool) -> list[DecidedRow]:
    """Run ``pi -p`` once (after ``ssa install pi`` when ``extension``); the decided
    rows that hold its prompt (exactly one user row)."""
    nonce = secrets.token_hex(4)
    model = agent_harness.model("chat")
    model.script(Text(f"print answer {nonce}"))
    setup = partial(ssa_install, "pi") if extension else None
    run = agent_harness.run_program("pi", f"headless prompt {nonce}", model=model, setup=setup)
    assert run.returncode == 0, run.stderr
    assert f"print answer {nonce}" in run.stdout
    rows = [r for p in Pi().transcripts(agent_harness.home()) for r in Pi().decide(p)]
    result = compare(rows, agent_harness.log.actions())
    assert not result.unseen, result.report()
    if extension:
        assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    prompt_rows = result.rows_of(run.action)
    assert [r.kind for r in prompt_rows] == ["message:user"], result.report()
    return prompt_rows


def test_print_mode_prompt_is_not_typed(agent_harness: Harness) -> None:
    """With our extension (``ssa install pi``) a ``pi -p`` prompt carries
    ``ssaInput: {source: "interactive", ui: false}`` (print mode passes no source and
    runs without a UI) and is ``headless_input``."""
    rows = _print_mode_rows(agent_harness, extension=True)
    assert [(r.human, r.reason) for r in rows] == [(False, "headless_input")]


def test_print_mode_without_the_extension_cannot_be_told_apart(agent_harness: Harness
                                                               ) -> None:
    """The documented limit: Pi 0.73.1 writes a print-mode session exactly as a TUI one
    (header, model_change, thinking_level_change, then the same user message entry); the
    input source reaches extensions only. Without our extension the prompt is typed."""
    rows = _print_mode_rows(agent_harness, extension=False)
    assert [(r.human, r.reason) for r in rows] == [(True, "typed")]
