"""Qwen Code 0.24.4 end to end: the real TUI in tmux against the fake Chat Completions server.

What the harness did (the action log) is the ground truth for how
:mod:`actors.upstream.qwen.classify` decides every row the real tool wrote, through
``ssa classify``'s code path and through ``ssa watch --json`` run beside the
TUI: one ``human_direct_message`` per typed turn (each waited for before the
next action, so each is its own burst) and none for anything else.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness import Agent, Harness, Home, QwenCode, Text, compare, merge_json
from tests.harness import actions as act
from tests.harness.scenarios import typed_prompts_and_a_shell_call
from tests.harness.watch import SsaWatch, compare_watch

pytestmark = [pytest.mark.agents, pytest.mark.timeout(420)]


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


def _typed(agent: Agent, watch: SsaWatch, text: str, answer: str) -> None:
    """Type one prompt, wait for its turn and for ``ssa watch`` to report it."""
    before = watch.human_turns()
    agent.script(Text(answer))
    agent.prompt(text)
    watch.wait_turns(before + 1)


def _hook_command_file(root: Path, nonce: str) -> Callable[[Home, Path], None]:
    """A setup adding a ``UserPromptSubmit`` hook (``additionalContext``), a file for an
    ``@`` reference and a project command ``/greet`` (``.qwen/commands/greet.md``: 0.24.4
    still reads ``.toml`` commands, but asks at start-up to migrate them to Markdown)."""
    def setup(home: Home, project: Path) -> None:
        script = root / "hook.sh"
        output = json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                    "additionalContext": f"hookctx-{nonce}"}})
        script.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{output}'\n")
        script.chmod(0o700)
        merge_json(QwenCode.settings_path(home), {"hooks": {"UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": str(script)}]}]}})
        (project / "notes.txt").write_text(f"file-content-{nonce}\n")
        commands = project / ".qwen" / "commands"
        commands.mkdir(parents=True, exist_ok=True)
        body = f"Custom command body cmdmark-{nonce} with {{{{args}}}}"
        (commands / "greet.md").write_text(f"---\ndescription: a harness command\n---\n{body}\n")
    return setup


def _interrupt(qwen: Agent) -> None:
    """Esc while the slow answer streams, then clear the prompt the TUI puts back.

    0.24.4's cancel handler (``cancelHandlerRef`` in
    ``chunks/startInteractiveUI-PJDI6SSE.js``) restores the cancelled turn's prompt
    into the empty input box (``restoreCancelledPrompt``); once output was shown it
    keeps that output and prints "Request cancelled." (before any output it rewinds
    the turn off the screen instead). The chat file keeps the turn's ``user`` record
    and the partial ``assistant`` one and gets no record of its own. Ctrl-U
    (``killLineLeft``, ``chunks/chunk-2WXS6WNU.js``) empties the one-line box, so the
    placeholder the idle test looks for comes back.

    Raises:
        TimeoutError: a screen did not come.
    """
    qwen.pane.wait_screen(qwen.tool.busy, 20, "busy")
    qwen.pane.wait_text("slow slow slow", 20)  # output shown: the keep-and-restore path
    qwen.interrupt("Escape")
    qwen.pane.wait_text("Request cancelled", 20)
    qwen.pane.wait_screen(lambda s: not qwen.tool.ready(s), 20, "the prompt put back")
    qwen.keys("C-u")
    qwen.wait_idle()


def test_hook_file_command_interrupt_subagents_compress_continue_fork_through_ssa_watch(
        agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    watch = agent_harness.watch(home)
    qwen = agent_harness.start("qwen", home=home,
                               setup=_hook_command_file(agent_harness.root, nonce))
    _typed(qwen, watch, f"typed one {nonce}", f"first answer {nonce}")
    _typed(qwen, watch, f"look at @notes.txt {nonce}", f"file answer {nonce}")
    qwen.script(Text(f"cmd answer {nonce}"))
    qwen.slash(f"/greet argz-{nonce}", human=True)  # typed: its record shows what was typed
    qwen.wait_request(f"cmdmark-{nonce}")
    qwen.wait_turn()
    watch.wait_turns(3)
    qwen.slash("/about")
    qwen.wait_idle()
    qwen.script_shell(f"echo shell-marker-{nonce}", then=f"shell done {nonce}")
    qwen.prompt(f"run it {nonce}")
    watch.wait_turns(4)

    qwen.script(Text(" ".join(["slow"] * 200), chunk_delay_s=0.1))
    qwen.type(f"interrupt me {nonce}")
    qwen.wait_request(f"interrupt me {nonce}")
    watch.wait_turns(5)  # the interrupted prompt was typed and sent: it counts
    _interrupt(qwen)
    _typed(qwen, watch, f"after interrupt {nonce}", f"after interrupt answer {nonce}")

    qwen.script_subagent(f"sub-agent prompt {nonce}", Text(f"sub answer {nonce}"),
                         then=f"parent after sub {nonce}")
    qwen.prompt(f"start a sub-agent {nonce}", timeout_s=90)
    watch.wait_turns(7)
    # A background sub-agent: the parent's next answer races the sub-agent's first,
    # so all three are plain texts; its result starts a notification turn.
    qwen.script(QwenCode().subagent(f"background prompt {nonce}", background=True),
                Text(f"bg one {nonce}"), Text(f"bg two {nonce}"), Text(f"bg three {nonce}"))
    agent_harness.log.record(qwen.name, "qwen", act.SUBAGENT, f"background prompt {nonce}",
                             background=True)
    qwen.prompt(f"start a background sub-agent {nonce}", timeout_s=90)
    qwen.pane.wait_text("completed", 30)
    qwen.wait_idle()
    watch.wait_turns(8)

    qwen.compact("/compress")
    _typed(qwen, watch, f"after compress {nonce}", f"after compress answer {nonce}")
    continued = agent_harness.reopen(qwen, "continue", ["--continue"])
    _typed(continued, watch, f"in the continued session {nonce}", f"continued answer {nonce}")
    assert len(continued.transcripts()) == 3  # the session and the two sub-agents' files
    # --fork-session: a new session file starting with copies (forkedFrom) of every record.
    fork = agent_harness.reopen(continued, "fork", ["--continue", "--fork-session"])
    _typed(fork, watch, f"in the forked session {nonce}", f"forked answer {nonce}")
    assert not fork.model.problems
    watch.settle()

    actions = agent_harness.log.actions(tool="qwen")
    rows = fork.decided_rows()
    result = compare(rows, actions)
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 11, result.report()
    copies = [r for r in result.rows if r.reason == "copied_row" and r.kind == "user"]
    assert len(copies) == 10, result.report()  # each typed record of the first session, once
    kinds = {(r.kind, r.reason) for r in result.rows}
    assert ("system:at_command", "system:at_command") in kinds, result.report()
    assert ("user:notification", "notification") in kinds, result.report()
    assert ("tool_result", "tool_result") in kinds, result.report()
    assert not any(r.reason == "unknown_kind" for r in result.rows), result.report()
    hooked = [r for r in result.rows if r.human and r.holds(f"hookctx-{nonce}")]
    assert len(hooked) == 11, result.report()  # the hook's context rides on each typed record
    sub_files = [p for p in fork.transcripts() if "subagents" in p.parts]
    assert len(sub_files) == 2, continued.transcripts()
    for prompt in (f"sub-agent prompt {nonce}", f"background prompt {nonce}"):
        sub = [r for r in result.rows if r.kind == "user" and r.holds(prompt)]
        assert sub, result.report()
        assert all(r.reason == "not_monitored: subagent (typed)" for r in sub), result.report()

    seen = compare_watch(watch.events(), actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
    assert [e.turns for e in seen.events] == [1] * 11, seen.report()
    assert len({e.session_key for e in seen.events}) == 2, seen.report()  # the fork's own


def test_print_mode_is_not_reported_by_ssa_watch(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    watch = agent_harness.watch(home)
    model = agent_harness.model("chat")
    model.script(Text(f"print answer {nonce}"))
    run = agent_harness.run_program("qwen", f"headless prompt {nonce}", model=model, home=home)
    assert run.returncode == 0, run.stderr
    watch.wait_not_monitored()  # decided once its file is EVIDENCE_GRACE_S old
    watch.settle()
    assert QwenCode().transcripts(home), "qwen -p wrote no session"
    seen = compare_watch(watch.events(), agent_harness.log.actions())
    assert watch.events() == [], seen.report()
    refused = [line for line in watch.adopted() if "notMonitoredSession" in line]
    assert refused, watch.lines
