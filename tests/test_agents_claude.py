"""Claude Code 2.1.332 end to end: the real TUI in tmux against the fake Anthropic server.

What the harness did (the action log) is the ground truth for how
``ssa classify``'s code path decides every row the real tool wrote.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from tests.harness import ClaudeCode, Fail, Harness, Home, Text, compare, merge_json
from tests.harness.scenarios import typed_prompts_and_a_shell_call

pytestmark = [pytest.mark.agents, pytest.mark.timeout(180)]


@pytest.fixture(autouse=True)
def _claude(require_tool: object) -> None:
    require_tool("claude")  # type: ignore[operator]


def test_typed_prompts_and_a_shell_call_decide_typed_exactly(agent_harness: Harness) -> None:
    claude = typed_prompts_and_a_shell_call(agent_harness, "claude")
    assert claude.model.pending == 0


def test_print_mode_run_is_not_typed(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    model = agent_harness.model("anthropic")
    model.script(Text(f"printed answer {nonce}"))
    run = agent_harness.run_program("claude", f"headless prompt {nonce}", model=model)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["result"] == f"printed answer {nonce}"
    home = agent_harness.home()
    rows = [r for p in ClaudeCode().transcripts(home) for r in ClaudeCode().decide(p)]
    result = compare(rows, agent_harness.log.actions())
    prompt_rows = result.rows_of(run.action)
    assert prompt_rows, result.report()  # the tool wrote the prompt ...
    assert not any(r.human for r in prompt_rows), result.report()  # ... as not typed
    # claude -p writes entrypoint "sdk-cli": a program-driven session.
    assert [r.reason for r in prompt_rows if r.kind == "user"] == ["sdk_entrypoint"], (
        result.report())
    assert result.precision == 1.0, result.report()


def test_hook_context_subagent_error_and_interrupt(agent_harness: Harness) -> None:
    """A UserPromptSubmit hook's context reaches the model and is not typed; a sub-agent's
    rows, an API error and an interrupt leave exactly the typed prompts typed."""
    nonce = secrets.token_hex(4)
    context = f"hook-context-{nonce}"
    hook = agent_harness.root / "hook.sh"
    hook.write_text("#!/bin/sh\ncat > /dev/null\nprintf '%s' '" + json.dumps({
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                               "additionalContext": context}}) + "'\n")
    hook.chmod(0o700)

    def add_hook(home: Home, project: Path) -> None:
        merge_json(ClaudeCode.settings_path(home), {"hooks": {"UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": str(hook)}]}]}})

    claude = agent_harness.start("claude", setup=add_hook)
    claude.script(Text(f"answer one {nonce}"))
    first = claude.prompt(f"first prompt {nonce}")
    assert first.has_text(context)  # the hook's additionalContext went to the model
    assert sum(r.has_text(context) for r in claude.model.main_requests()) == 1

    sub = claude.script_subagent(f"sub-agent task {nonce}", then=f"parent done {nonce}")
    claude.prompt(f"start a helper {nonce}")
    claude.wait_request(f"sub-agent task {nonce}")  # the sub-agent's own main request

    claude.script(Text(" ".join(["slow"] * 200), chunk_delay_s=0.1))
    claude.type(f"interrupt me {nonce}")
    claude.wait_request(f"interrupt me {nonce}")
    claude.pane.wait_screen(claude.tool.busy, 20, "busy")
    claude.interrupt()
    claude.wait_idle()
    claude.pane.wait_text(f"interrupt me {nonce}", 10)  # the prompt is back in the box ...
    claude.keys("C-c")  # ... and Ctrl-C clears it
    claude.pane.wait_screen(lambda s: f"interrupt me {nonce}" not in s.split("\u276f")[-1], 10,
                            "an empty prompt box")

    # Last: after a 403 ("Please run /login") Claude Code takes no further prompt.
    claude.script(Fail(403, f"scripted failure {nonce}"))  # a 400 it retries once
    claude.prompt(f"this one fails {nonce}")
    claude.pane.wait_text(f"scripted failure {nonce}", 20)
    assert not claude.model.problems

    result = compare(claude.decided_rows(), agent_harness.log.actions(agent=claude.name))
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 4, result.report()
    sub_rows = result.rows_of(sub)
    assert any("subagents" in str(r.path) for r in sub_rows), result.report()
    hook_rows = [r for r in result.rows if r.holds(context)]
    assert hook_rows, result.report()
    assert not any(r.human for r in hook_rows), result.report()


def test_a_conversation_continued_under_a_new_id_counts_only_its_own_prompts(
        agent_harness: Harness) -> None:
    """``claude --continue --fork-session`` copies the earlier prompts (uuid and
    timestamp kept) into a new file: only the prompt typed there counts there;
    every 2.1.332 row kind is decided (none unknown)."""
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    first = agent_harness.start("claude", home=home)
    first.script(Text(f"answer one {nonce}"))
    first.prompt(f"typed before the fork {nonce}")
    first.quit()
    agent_harness.log.record(first.name, "claude", "fork", None, args="--continue --fork-session")
    fork = agent_harness.start("claude", home=home, model=first.model,
                               args=["--continue", "--fork-session"], name="fork")
    fork.script(Text(f"answer two {nonce}"))
    fork.prompt(f"typed after the fork {nonce}")
    fork.quit()

    transcripts = fork.transcripts()
    assert len(transcripts) == 2, transcripts
    rows = fork.decided_rows()
    result = compare(rows, agent_harness.log.actions())
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 2, result.report()
    copies = [r for r in rows if r.reason == "copied_row"]
    assert [r.path for r in copies] == [transcripts[1]], result.report()
    assert copies[0].holds(f"typed before the fork {nonce}")
    assert not [r for r in rows if r.reason == "unknown_kind"], result.report()
    kinds = {r.kind for r in rows}
    assert {"api-request", "atis-latch", "attachment:prompt_snapshot"} <= kinds, kinds
