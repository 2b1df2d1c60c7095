"""Claude Code 2.1.332: slash commands, a skill, compaction, an interrupt, --continue,
--resume and --fork-session, decided through ``ssa classify``'s code path and through
``ssa watch --json`` running beside the TUI.

The action log is the ground truth: a row is typed only for what the harness typed as
a person would. ``ssa watch`` must report one ``human_direct_message`` per typed
turn (each test waits for it before the next action, so each turn is its own burst)
and none for anything else.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import Agent, ClaudeCode, DecidedRow, Harness, Text, compare
from tests.harness.actions import Action
from tests.harness.watch import SsaWatch, compare_watch

pytestmark = [pytest.mark.agents, pytest.mark.timeout(240)]


@pytest.fixture(autouse=True)
def _claude(require_tool: object) -> None:
    require_tool("claude")  # type: ignore[operator]


def _typed(agent: Agent, watch: SsaWatch, text: str, answer: str) -> None:
    """Type one prompt, wait for its turn and for ``ssa watch`` to report it."""
    before = watch.human_turns()
    agent.script(Text(answer))
    agent.prompt(text)
    watch.wait_turns(before + 1)


def _add_command_and_skill(project: Path, nonce: str) -> None:
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "harness-cmd.md").write_text(f"Say the custom command marker cmdmark-{nonce}.\n")
    skill = project / ".claude" / "skills" / "harness-skill"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: harness-skill\ndescription: a harness skill\n"
                                    f"---\nSkill body skillmark-{nonce}.\n")


def test_slash_commands_skill_compact_interrupt_continue_resume(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    _add_command_and_skill(project, nonce)
    watch = agent_harness.watch(home)
    claude = agent_harness.start("claude", home=home, project=project)
    _typed(claude, watch, f"typed one {nonce}", f"answer one {nonce}")

    claude.script(Text(f"command answer {nonce}"))
    command = claude.slash("/harness-cmd")  # a custom slash command: chosen, not typed
    claude.wait_request(f"cmdmark-{nonce}")
    claude.wait_turn()
    claude.script(Text(f"skill answer {nonce}"))
    skill = claude.slash("/harness-skill")  # a skill run as a slash command
    claude.wait_request(f"skillmark-{nonce}")
    claude.wait_turn()
    claude.compact()

    claude.script(Text(" ".join(["slow"] * 200), chunk_delay_s=0.1))
    claude.type(f"interrupt me {nonce}")
    claude.wait_request(f"interrupt me {nonce}")
    watch.wait_turns(2)
    claude.pane.wait_screen(claude.tool.busy, 20, "busy")
    claude.interrupt()
    claude.wait_idle()
    claude.keys("C-c")  # clear the interrupted prompt Claude Code puts back in the box
    _typed(claude, watch, f"typed after the interrupt {nonce}", f"after {nonce}")

    session = claude.transcripts()[0].stem
    continued = agent_harness.reopen(claude, "continue", ["--continue"])
    _typed(continued, watch, f"typed in the continued session {nonce}", f"cont {nonce}")
    resumed = agent_harness.reopen(continued, "resume", ["--resume", session])
    _typed(resumed, watch, f"typed in the resumed session {nonce}", f"res {nonce}")
    assert not resumed.model.problems
    watch.settle()

    # --continue and --resume append to the session's own file.
    assert [p.stem for p in resumed.transcripts()] == [session]
    actions = agent_harness.log.actions(tool="claude")
    result = compare(resumed.decided_rows(), actions)
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 5, result.report()
    # The command's row (<command-name>) and the expansion after it (isMeta) are not typed.
    for action, marker in ((command, f"cmdmark-{nonce}"), (skill, f"skillmark-{nonce}")):
        reasons = {r.reason for r in result.rows_of(action) if r.kind == "user"}
        assert "command" in reasons, result.report()
        assert reasons <= {"command", "meta"}, result.report()
        assert {r.reason for r in result.rows if r.kind == "user" and r.holds(marker)} == {
            "meta"}, result.report()
    kinds = {(r.kind, r.reason) for r in result.rows}
    assert ("user", "compact_summary") in kinds, result.report()
    assert ("system:compact_boundary", "not_user") in kinds, result.report()

    seen = compare_watch(watch.events(), actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
    assert [e.turns for e in seen.events] == [1] * 5, seen.report()
    assert {e.session_key for e in seen.events} == {f"agent:main:claude:{session}"}


@dataclass(frozen=True)
class Forked:
    """What the fork scenario left: the decided rows, the actions and ``ssa watch``."""

    rows: list[DecidedRow]
    actions: list[Action]
    watch: SsaWatch
    fork: Path


@pytest.fixture
def forked(agent_harness: Harness) -> Forked:
    """One typed prompt, then ``claude --resume ID --fork-session`` and one more.

    Its checks fail as errors, outside the xfail of the test that uses it.
    """
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    watch = agent_harness.watch(home)
    claude = agent_harness.start("claude", home=home)
    _typed(claude, watch, f"typed before the fork {nonce}", f"one {nonce}")
    session = claude.transcripts()[0]
    fork = agent_harness.reopen(claude, "fork", ["--resume", session.stem, "--fork-session"])
    fork.script(Text(f"two {nonce}"))
    fork.prompt(f"typed in the fork {nonce}")
    files = fork.transcripts()
    assert len(files) == 2, files
    (new,) = set(files) - {session}
    # The fork's file starts with copies of the earlier session's rows.
    assert any(r.holds(f"typed before the fork {nonce}") and r.kind == "user"
               for r in ClaudeCode().decide(new))
    watch.wait_turns(2)
    watch.settle()
    return Forked(fork.decided_rows(), agent_harness.log.actions(), watch, new)


def test_fork_session_copies_are_not_typed_again(forked: Forked) -> None:
    """Issue 22, class 2: claude --resume ID --fork-session writes a new session file that
    starts with copies of the earlier session's rows (same uuid and timestamp, new
    sessionId); the copies are ``copied_row``, and ssa watch reports one turn only."""
    result = compare(forked.rows, forked.actions)
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    seen = compare_watch(forked.watch.events(), forked.actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
