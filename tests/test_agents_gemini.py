"""Gemini CLI 0.61.0 end to end: the real TUI in tmux against the fake Gemini API server.

What the harness did (the action log) is the ground truth for how
:mod:`actors.upstream.gemini.classify` decides every row the real tool wrote.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from tests.harness import GeminiCli, Harness, Home, Text, ToolUse, compare, merge_json
from tests.harness.scenarios import typed_prompts_and_a_shell_call
from tests.harness.watch import compare_watch

pytestmark = [pytest.mark.agents, pytest.mark.timeout(300)]


@pytest.fixture(autouse=True)
def _gemini(require_tool: object) -> None:
    require_tool("gemini")  # type: ignore[operator]


def test_typed_prompts_and_a_shell_call_decide_typed_exactly(agent_harness: Harness) -> None:
    typed_prompts_and_a_shell_call(agent_harness, "gemini")


def _hook_and_command(root: Path, nonce: str):  # type: ignore[no-untyped-def]
    """A setup adding a BeforeAgent hook (additionalContext), a file and a custom command."""
    def setup(home: Home, project: Path) -> None:
        script = root / "hook.sh"
        output = json.dumps({"hookSpecificOutput": {"hookEventName": "BeforeAgent",
                                                    "additionalContext": f"hookctx-{nonce}"}})
        script.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{output}'\n")
        script.chmod(0o700)
        merge_json(GeminiCli.settings_path(home), {
            "hooksConfig": {"enabled": True},
            "hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "command": str(script)}]}]}})
        (project / "notes.txt").write_text(f"file-content-{nonce}\n")
        commands = project / ".gemini" / "commands"
        commands.mkdir(parents=True, exist_ok=True)
        (commands / "greet.toml").write_text(
            f'prompt = "Custom command body cmdmark-{nonce} with {{{{args}}}}"\n')
    return setup


def test_hooks_files_commands_interrupt_compress_resume_subagent(agent_harness: Harness) -> None:
    """Every scripted action, decided by ``ssa classify``'s code path and by ``ssa watch``
    beside the TUI: one ``human_direct_message`` per typed turn (each waited for before
    the next action, so each is its own burst), none for the rest."""
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    watch = agent_harness.watch(home)
    gemini = agent_harness.start("gemini", home=home,
                                 setup=_hook_and_command(agent_harness.root, nonce))
    gemini.script(Text(f"first answer {nonce}"))
    gemini.prompt(f"typed one {nonce}")
    watch.wait_turns(1)
    gemini.script_shell(f"echo shell-marker-{nonce}", then=f"shell done {nonce}")
    gemini.prompt(f"run it {nonce}")
    watch.wait_turns(2)
    gemini.script(Text(f"file answer {nonce}"))
    gemini.prompt(f"look at @notes.txt {nonce}")
    watch.wait_turns(3)
    gemini.script(Text(f"cmd answer {nonce}"))
    gemini.slash(f"/greet argz-{nonce}", human=True)
    gemini.wait_request(f"cmdmark-{nonce}")
    gemini.wait_turn()
    watch.wait_turns(4)
    gemini.slash("/about", text=None)
    gemini.wait_idle()

    gemini.script(Text(" ".join(["slow"] * 200), chunk_delay_s=0.1))
    gemini.type(f"interrupt me {nonce}")
    gemini.wait_request(f"interrupt me {nonce}")
    gemini.pane.wait_screen(gemini.tool.busy, 20, "busy")
    gemini.interrupt("Escape")
    gemini.pane.wait_text("Request cancelled", 20)
    gemini.wait_idle()
    watch.wait_turns(5)
    gemini.script(Text(f"after interrupt answer {nonce}"))
    gemini.prompt(f"after interrupt {nonce}")
    watch.wait_turns(6)
    gemini.compact("/compress")
    gemini.script(Text(f"after compress answer {nonce}"))
    gemini.prompt(f"after compress {nonce}")
    watch.wait_turns(7)

    resumed = agent_harness.reopen(gemini, "resume", ["--resume", "latest"])
    resumed.script(Text(f"resumed answer {nonce}"))
    try:
        resumed.prompt(f"in the resumed session {nonce}")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}\nscreen:\n{resumed.screen(history=True)[-3000:]}") from None
    watch.wait_turns(8)
    resumed.script_subagent(f"sub-agent prompt {nonce}",
                            ToolUse("complete_task", {"result": f"sub result {nonce}"}),
                            then=f"parent after sub {nonce}")
    resumed.prompt(f"start a sub-agent {nonce}", timeout_s=90)
    watch.wait_turns(9)
    assert not resumed.model.problems
    watch.settle()

    # The session (resumed into its own file), the sub-agent's, and, when the resume
    # started in another minute, the resumed process's start-up file (header + history).
    files = resumed.transcripts()
    assert len(files) in (2, 3), files
    actions = agent_harness.log.actions(tool="gemini")
    result = compare(resumed.decided_rows(), actions)
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 9, result.report()
    reasons = {(r.kind, r.reason) for r in result.rows}
    assert ("$set.messages", "history_rewrite") in reasons, result.report()
    assert ("user", "tool_result") in reasons, result.report()
    # /compress replaced the history ($set.messages holding the snapshot); no row of its own.
    assert any(r.kind == "$set.messages" and r.holds("<state_snapshot>") for r in result.rows)
    sub = [r for r in result.rows if r.holds(f"sub-agent prompt {nonce}") and r.kind == "user"]
    assert sub, result.report()
    assert all(r.reason.startswith("not_monitored: subagent") for r in sub), result.report()
    assert not any(r.reason == "unknown_kind" for r in result.rows), result.report()

    seen = compare_watch(watch.events(), actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
    assert [e.turns for e in seen.events] == [1] * 9, seen.report()
    # The sub-agent's file (chats/<parent id>/...) is no session of its own: never adopted.
    adopted = [line["adoptedSession"] for line in watch.adopted() if "adoptedSession" in line]
    assert adopted, watch.adopted()
    assert all(Path(a["path"]).parent.name == "chats" for a in adopted), adopted


def test_print_mode_is_not_monitored(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    watch = agent_harness.watch(home)
    model = agent_harness.model("gemini")
    model.script(Text(f"print answer {nonce}"))
    run = agent_harness.run_program("gemini", f"headless prompt {nonce}", model=model,
                                    home=home)
    assert run.returncode == 0, run.stderr
    assert f"print answer {nonce}" in run.stdout
    watch.wait_not_monitored()  # decided once its file is EVIDENCE_GRACE_S old
    watch.settle()
    assert watch.events() == [], watch.adopted()  # ssa watch: no notice for it
    assert [line for line in watch.adopted() if "notMonitoredSession" in line], watch.adopted()
    rows = [r for p in GeminiCli().transcripts(home) for r in GeminiCli().decide(p)]
    result = compare(rows, agent_harness.log.actions())
    prompt_rows = result.rows_of(run.action)
    assert [r.kind for r in prompt_rows] == ["user"], result.report()
    assert prompt_rows[0].reason == "not_monitored: program_driven (typed)", result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
