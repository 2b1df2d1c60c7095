"""OpenCode 1.18.33: a task sub-agent, a custom command, /compact, an interrupt,
--continue and --session ID --fork, decided through ``ssa classify``'s code path and
through ``ssa watch --json`` beside the TUI.

OpenCode starts slowly on two busy cores (a minute or more for the TUI and its first
turn), so one scenario runs once for the module (:func:`scenario`) and each test
checks one part of it. The action log is the ground truth: a row is typed only for
what the harness typed as a person would; ``ssa watch`` must report one
``human_direct_message`` per typed turn (each is waited for before the next action)
and none for anything else.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.harness import Agent, AgentInstall, DecidedRow, Harness, OpenCode, Text, compare
from tests.harness.actions import Action
from tests.harness.fixtures import REQUIRED
from tests.harness.watch import SsaWatch, WatchEvent, compare_watch

pytestmark = [pytest.mark.agents, pytest.mark.timeout(900)]  # the first test runs it all


@dataclass(frozen=True)
class Scenario:
    """The module's one run.

    Attributes:
        rows: every decided row of every session in the store.
        actions: the action log.
        events: ``ssa watch``'s ``human_direct_message`` events.
        fork_at: the ``fork`` action (what came later belongs to the fork).
        before_fork: the sessions that existed before it.
        nonce: the run's nonce.
        installed: the config directories whose ``node_modules`` OpenCode filled.
    """

    rows: list[DecidedRow]
    actions: list[Action]
    events: list[WatchEvent]
    fork_at: Action
    before_fork: frozenset[str]
    nonce: str
    installed: list[str]


def _typed(agent: Agent, watch: SsaWatch, text: str, answer: str) -> None:
    """Type one prompt, wait for its turn and for ``ssa watch`` to report it."""
    before = watch.human_turns()
    agent.script(Text(answer))
    agent.prompt(text)
    watch.wait_turns(before + 1, timeout_s=60)


def _history_shown(agent: Agent, text: str) -> None:
    """Wait until a reopened TUI shows the session's history (keys typed on its home
    screen would start a new session)."""
    agent.pane.wait_text(text, agent.tool.startup_timeout_s)
    agent.wait_idle()


@pytest.fixture(scope="module")
def scenario(agent_install: AgentInstall, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Scenario]:
    # Module fixtures run before the autouse require_tool: check the binary here too.
    if not agent_install.binary(OpenCode.binary).exists():
        if REQUIRED:
            pytest.fail("CI: opencode is not installed", pytrace=False)
        pytest.skip("opencode is not installed")
    nonce = secrets.token_hex(4)
    with Harness(tmp_path_factory.mktemp("opencode-actions"), agent_install) as harness:
        yield _run(harness, nonce)


def _run(harness: Harness, nonce: str) -> Scenario:
    home = harness.home()
    project = harness.project(git=True)
    commands = project / ".opencode" / "command"
    commands.mkdir(parents=True)
    (commands / "harness-cmd.md").write_text(
        f"---\ndescription: a harness command\n---\nSay the command marker cmdmark-{nonce}.\n")
    watch = harness.watch(home)
    opencode = harness.start("opencode", home=home, project=project)
    _typed(opencode, watch, f"typed one {nonce}", f"answer one {nonce}")

    opencode.script_subagent(f"sub-agent task {nonce}", then=f"parent done {nonce}")
    opencode.prompt(f"start a helper {nonce}")  # the task tool waits for its child session
    watch.wait_turns(2, timeout_s=60)

    # A custom command with arguments: OpenCode stores the template with the typed
    # arguments appended, as one plain user message (no marker): the arguments are typed.
    typed_args = f"typed command arguments {nonce}"
    before = watch.human_turns()
    opencode.script(Text(f"command answer {nonce}"))
    opencode.slash(f"/harness-cmd {typed_args}", human=True, text=typed_args)
    opencode.wait_request(f"cmdmark-{nonce}")
    opencode.wait_turn()
    watch.wait_turns(before + 1, timeout_s=60)
    opencode.compact(enter=("Enter", "Enter"))  # the first Enter picks the completion

    opencode.script(Text(" ".join(["slow"] * 300), chunk_delay_s=0.1))
    opencode.type(f"interrupt me {nonce}")
    opencode.wait_request(f"interrupt me {nonce}")
    watch.wait_turns(before + 2, timeout_s=60)
    opencode.pane.wait_screen(opencode.tool.busy, 30, "busy")
    opencode.interrupt()
    opencode.pane.wait_text("esc again to interrupt", 10)
    opencode.interrupt()
    opencode.wait_idle()
    _typed(opencode, watch, f"typed after the interrupt {nonce}", f"after {nonce}")

    db = opencode.tool.db_path(home)
    (first,) = opencode.tool.sessions(db, project)[:1]
    continued = harness.reopen(opencode, "continue", ["--continue"], wait_ready=False)
    _history_shown(continued, f"typed after the interrupt {nonce}")
    _typed(continued, watch, f"typed in the continued session {nonce}", f"cont {nonce}")

    watch.settle()
    before_fork = frozenset(continued.tool.sessions(db))
    fork = harness.reopen(continued, "fork", ["--session", first, "--fork"], wait_ready=False)
    fork_at = harness.log.actions()[-1]
    _history_shown(fork, f"typed in the continued session {nonce}")
    _typed(fork, watch, f"typed in the fork {nonce}", f"fork {nonce}")
    assert not fork.model.problems, fork.model.problems
    copies = [r for r in fork.decided_rows() if r.session not in before_fork
              and r.holds(f"typed one {nonce}")]
    assert copies, "the fork copied no message"
    watch.settle()
    rows = [r for p in fork.tool.transcripts(home) for r in fork.tool.decide(p)]
    installed = [str(d) for d in (OpenCode.config_path(home).parent, project / ".opencode")
                 if any((d / "node_modules").iterdir())]
    return Scenario(rows, harness.log.actions(), watch.events(), fork_at, before_fork, nonce,
                    installed)


@pytest.fixture(autouse=True)
def _opencode(require_tool: object) -> None:
    require_tool("opencode")  # type: ignore[operator]


def _key(session: str | None) -> str:
    return f"agent:main:opencode:{session}"


def test_subagent_command_compact_interrupt_continue(scenario: Scenario) -> None:
    rows = [r for r in scenario.rows if r.session in scenario.before_fork]
    actions = [a for a in scenario.actions if a.seq < scenario.fork_at.seq]
    result = compare(rows, actions)
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 6, result.report()
    sub = next(a for a in actions if a.kind == "subagent")
    assert {r.reason for r in result.rows_of(sub) if r.kind == "message:user"} == {
        "child_session"}, result.report()
    # --continue went on in the session it continued: one session besides the child.
    assert len({r.session for r in rows if r.reason != "child_session"}) == 1, result.report()

    keys = {_key(s) for s in scenario.before_fork}
    events = [e for e in scenario.events if e.session_key in keys]
    seen = compare_watch(events, actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
    assert [e.turns for e in seen.events] == [1] * 6, seen.report()


def test_fork_copies_are_not_typed_again(scenario: Scenario) -> None:
    """opencode --session ID --fork copies every message into a new session ('<title>
    (fork #1)', no parent_id, new ids, the original time.created): each copied user
    message predates the session and is copied_row; the prompt typed in the fork is typed."""
    rows = [r for r in scenario.rows if r.session not in scenario.before_fork]
    actions = [a for a in scenario.actions if a.seq >= scenario.fork_at.seq]
    result = compare(rows, actions)
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 1, result.report()
    copied = [r for r in rows if r.holds(f"typed one {scenario.nonce}")
              and r.reason != "child_session"]
    assert copied, result.report()
    assert {r.reason for r in copied} == {"copied_row"}, result.report()
    keys = {_key(r.session) for r in rows}
    seen = compare_watch([e for e in scenario.events if e.session_key in keys], actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()


def test_no_dependency_install_runs(scenario: Scenario) -> None:
    """The seeded config directories (tests/harness/tools/opencode.py) keep OpenCode from
    installing ``@opencode-ai/plugin``: a TUI quit during that install left the reopened
    TUI waiting on its lock (CI, stop 30)."""
    assert scenario.installed == []
