"""Pi 0.73.1: /skill:, /compact, an interrupt, --continue, --session, --fork and RPC mode,
decided through ``ssa classify``'s code path and through ``ssa watch --json`` beside the TUI.

The action log is the ground truth: a row is typed only for what the harness typed as
a person would (``/skill:name`` alone is a choice; text typed after it is typed).
``ssa watch`` must report one ``human_direct_message`` per typed turn (each is waited
for before the next action, so each is its own burst) and none for anything else.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from functools import partial

import pytest

from tests.harness import Agent, DecidedRow, Harness, Pi, Text, compare
from tests.harness.actions import Action
from tests.harness.ssa_install import ssa_install
from tests.harness.watch import SsaWatch, compare_watch

pytestmark = [pytest.mark.agents, pytest.mark.timeout(180)]


@pytest.fixture(autouse=True)
def _pi(require_tool: object) -> None:
    require_tool("pi")  # type: ignore[operator]


def _typed(agent: Agent, watch: SsaWatch, text: str, answer: str) -> None:
    """Type one prompt, wait for its turn and for ``ssa watch`` to report it."""
    before = watch.human_turns()
    agent.script(Text(answer))
    agent.prompt(text)
    watch.wait_turns(before + 1)


def test_skill_compact_interrupt_continue_session(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    skill_dir = project / ".pi" / "skills" / "harness-skill"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\nname: harness-skill\ndescription: a harness "
                                        f"skill for tests\n---\nSkill body skillmark-{nonce}.\n")
    watch = agent_harness.watch(home)
    # With our extension installed: every prompt typed into the TUI carries
    # ssaInput {source: "interactive", ui: true} and stays typed.
    pi = agent_harness.start("pi", home=home, project=project, setup=partial(ssa_install, "pi"))
    _typed(pi, watch, f"typed one {nonce}", f"answer one {nonce}")

    pi.script(Text(f"skill answer {nonce}"))
    pi.slash("/skill:harness-skill", text=None)  # bare: the expansion only, not typed
    pi.wait_request(f"skillmark-{nonce}")
    pi.wait_turn()
    pi.script(Text(f"skill answer two {nonce}"))
    typed_after = f"typed after the skill {nonce}"
    pi.slash(f"/skill:harness-skill {typed_after}", human=True, text=typed_after)
    pi.wait_request(typed_after)
    pi.wait_turn()
    watch.wait_turns(2)
    pi.compact()

    pi.script(Text(" ".join(["slow"] * 200), chunk_delay_s=0.1))
    pi.type(f"interrupt me {nonce}")
    pi.wait_request(f"interrupt me {nonce}")
    watch.wait_turns(3)
    pi.pane.wait_screen(pi.tool.busy, 20, "busy")
    pi.interrupt()
    pi.pane.wait_text("Operation aborted", 20)
    pi.wait_idle()
    _typed(pi, watch, f"typed after the interrupt {nonce}", f"after {nonce}")

    (session,) = pi.transcripts()
    continued = agent_harness.reopen(pi, "continue", ["--continue"])
    _typed(continued, watch, f"typed in the continued session {nonce}", f"cont {nonce}")
    resumed = agent_harness.reopen(continued, "resume", ["--session", str(session)])
    _typed(resumed, watch, f"typed in the resumed session {nonce}", f"res {nonce}")
    assert not resumed.model.problems
    watch.settle()

    assert resumed.transcripts() == [session]  # both append to the session's own file
    actions = agent_harness.log.actions(tool="pi")
    result = compare(resumed.decided_rows(), actions)
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 6, result.report()
    bare = [r for r in result.rows if r.holds(f"skillmark-{nonce}") and not r.holds(typed_after)
            and r.kind == "message:user"]
    assert [r.reason for r in bare] == ["skill_command"], result.report()
    assert ("compaction", "compaction") in {(r.kind, r.reason) for r in result.rows}
    marked = [r for r in result.rows if r.kind == "message:user" and r.holds("interactive")]
    assert len(marked) >= 6, result.report()  # the extension's record, on the typed rows

    seen = compare_watch(watch.events(), actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
    assert [e.turns for e in seen.events] == [1] * 6, seen.report()


@dataclass(frozen=True)
class Scenario:
    """What a scenario left: the decided rows, the actions and ``ssa watch``."""

    rows: list[DecidedRow]
    actions: list[Action]
    watch: SsaWatch


@pytest.fixture
def forked(agent_harness: Harness) -> Scenario:
    """One typed prompt, then ``pi --fork <file>`` and one typed prompt in the fork.

    Its checks fail as errors, outside the xfail of the test that uses it.
    """
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    watch = agent_harness.watch(home)
    pi = agent_harness.start("pi", home=home)
    _typed(pi, watch, f"typed before the fork {nonce}", f"one {nonce}")
    (session,) = pi.transcripts()
    fork = agent_harness.reopen(pi, "fork", ["--fork", str(session)])
    _typed(fork, watch, f"typed in the fork {nonce}", f"two {nonce}")
    files = fork.transcripts()
    assert len(files) == 2, files
    (new,) = set(files) - {session}
    # The fork's file starts with copies of the earlier session's entries.
    assert any(r.holds(f"typed before the fork {nonce}") and r.kind == "message:user"
               for r in Pi().decide(new))
    watch.settle()
    return Scenario(fork.decided_rows(), agent_harness.log.actions(), watch)


def test_fork_copies_are_not_typed_again(forked: Scenario) -> None:
    """pi --fork FILE writes a new file (header ``parentSession``, stamped now) that
    starts with the earlier session's entries, unchanged: the copied prompt is
    ``copied_row`` there, the prompt typed in the fork is typed."""
    result = compare(forked.rows, forked.actions)
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 2, result.report()
    copies = [r for r in result.rows if r.reason == "copied_row"]
    assert [r.kind for r in copies] == ["message:user"], result.report()
    assert len({r.path for r in copies} | {r.path for _, r in result.true_positives}) == 2
    seen = compare_watch(forked.watch.events(), forked.actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()


@pytest.fixture
def rpc_run(agent_harness: Harness) -> Scenario:
    """Two prompts sent through ``pi --mode rpc`` with ``ssa watch`` running.

    Its checks fail as errors, outside the xfail of the test that uses it.
    """
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    watch = agent_harness.watch(home)
    model = agent_harness.model("chat")
    model.script(Text(f"rpc answer one {nonce}"), Text(f"rpc answer two {nonce}"))
    run = agent_harness.run_rpc([f"rpc prompt one {nonce}", f"rpc prompt two {nonce}"],
                                home=home, model=model, setup=partial(ssa_install, "pi"))
    assert run.returncode == 0, run.stderr
    assert f"rpc answer two {nonce}" in run.stdout
    assert '"type":"agent_end"' in run.stdout.replace(" ", "")
    rows = [r for p in Pi().transcripts(home) for r in Pi().decide(p)]
    result = compare(rows, agent_harness.log.actions())
    assert not result.unseen, result.report()
    watch.settle()
    return Scenario(rows, agent_harness.log.actions(), watch)


def test_rpc_prompts_are_not_typed(rpc_run: Scenario) -> None:
    """With our extension (``ssa install pi``) each prompt sent through ``pi --mode rpc``
    carries ``ssaInput: {source: "rpc"}`` and is ``rpc_input``; ssa watch reports none."""
    assert not any(r.human for r in rpc_run.rows), [(r.unit, r.reason) for r in rpc_run.rows]
    prompts = [r for r in rpc_run.rows if r.kind == "message:user"]
    assert [r.reason for r in prompts] == ["rpc_input"] * 2, [(r.unit, r.reason) for r in prompts]
    assert rpc_run.watch.events() == [], compare_watch(rpc_run.watch.events(),
                                                       rpc_run.actions).report()
