"""Codex 0.171.0: a spawn_agent sub-agent, /compact, /review (a preset and custom
instructions), an interrupt, ``codex resume --last`` and ``codex fork --last``, decided
through ``ssa classify``'s code path and through ``ssa watch --json`` beside the TUI.

The action log is the ground truth: a row is typed only for what the harness typed as
a person would (custom review instructions are typed; a review preset is a menu
choice). ``ssa watch`` must report one ``human_direct_message`` per typed turn (each
is waited for before the next action, so each is its own burst) and none for
anything else.
"""

from __future__ import annotations

import secrets

import pytest

from tests.harness import Agent, Harness, Text, compare
from tests.harness.watch import SsaWatch, compare_watch

pytestmark = [pytest.mark.agents, pytest.mark.timeout(240)]

REVIEW_PRESET = "Review the current code changes"
"""The start of the prompt Codex sends for the "Review uncommitted changes" preset."""


@pytest.fixture(autouse=True)
def _codex(require_tool: object) -> None:
    require_tool("codex")  # type: ignore[operator]


def _typed(agent: Agent, watch: SsaWatch, text: str, answer: str) -> None:
    """Type one prompt, wait for its turn and for ``ssa watch`` to report it."""
    before = watch.human_turns()
    agent.script(Text(answer))
    agent.prompt(text)
    watch.wait_turns(before + 1)


def _review_menu(codex: Agent, downs: int, text: str | None) -> None:
    """``/review``, then the preset ``downs`` rows below the first."""
    codex.slash("/review", text=text)
    codex.pane.wait_text("Select a review preset", 10)
    codex.keys(*["Down"] * downs)
    codex.pane.wait_quiet(0.3, 5)
    codex.keys("Enter")


def test_subagent_compact_review_interrupt_resume_fork(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    (project / "README.md").write_text(f"an uncommitted change {nonce}\n")  # for /review
    watch = agent_harness.watch(home)
    codex = agent_harness.start("codex", home=home, project=project)
    _typed(codex, watch, f"typed one {nonce}", f"answer one {nonce}")

    # spawn_agent returns at once: the parent's follow-up and the sub-agent's turn race
    # for the two texts. The sub-agent's <subagent_notification> goes to the model with
    # the parent's next turn (injected context, not typed).
    sub = codex.script_subagent(f"sub-agent task {nonce}", Text(f"text a {nonce}"),
                                then=f"text b {nonce}")
    codex.type(f"start a helper {nonce}")
    watch.wait_turns(2)
    codex.wait_request(f"sub-agent task {nonce}")
    codex.wait_turn()

    codex.compact()
    codex.script(Text(f"review findings {nonce}"))
    _review_menu(codex, 1, REVIEW_PRESET)  # "Review uncommitted changes": a menu choice
    codex.wait_request(REVIEW_PRESET)
    codex.wait_turn()
    codex.script(Text(f"custom findings {nonce}"))
    _review_menu(codex, 3, None)  # "Custom review instructions": the person types them
    codex.pane.wait_quiet(0.5, 10)
    before = watch.human_turns()
    codex.prompt(f"custom review instructions {nonce}")
    watch.wait_turns(before + 1)

    codex.script(Text(" ".join(["slow"] * 200), chunk_delay_s=0.1))
    codex.type(f"interrupt me {nonce}")
    codex.wait_request(f"interrupt me {nonce}")
    watch.wait_turns(before + 2)
    codex.pane.wait_screen(codex.tool.busy, 20, "busy")
    codex.interrupt()
    codex.pane.wait_text("Conversation interrupted", 20)
    codex.wait_idle()
    _typed(codex, watch, f"typed after the interrupt {nonce}", f"after {nonce}")

    session = codex.transcripts()[0]  # the main thread's (the sub-agent's is newer)
    resumed = agent_harness.reopen(codex, "resume", ["resume", "--last"])
    _typed(resumed, watch, f"typed in the resumed session {nonce}", f"res {nonce}")
    forked = agent_harness.reopen(resumed, "fork", ["fork", "--last"])
    _typed(forked, watch, f"typed in the fork {nonce}", f"fork {nonce}")
    assert not forked.model.problems
    watch.settle()

    actions = agent_harness.log.actions(tool="codex")
    result = compare(forked.decided_rows(), actions)
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 7, result.report()
    sub_rows = result.rows_of(sub)
    assert any(r.reason.startswith("not_monitored: subagent_thread") for r in sub_rows), (
        result.report())
    reasons = {(r.kind, r.reason) for r in result.rows}
    assert ("compacted", "compacted") in reasons, result.report()
    assert ("event_msg:item_completed", "review_request") in reasons, result.report()

    seen = compare_watch(watch.events(), actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
    assert [e.turns for e in seen.events] == [1] * 7, seen.report()
    # resume appends to the session's file; the fork is a new thread that copies nothing
    # a person typed: its one event is its own prompt's.
    keys = [e.session_key for e in seen.events]
    assert len(set(keys[:6])) == 1, seen.report()
    assert keys[6] != keys[0], seen.report()
    assert session.stem.endswith(keys[0].rsplit(":", 1)[-1]), (session, keys)
