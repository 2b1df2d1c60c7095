"""Aider 0.86.2 end to end: the real CLI in tmux against the fake Chat Completions server.

What the harness did (the action log) is the ground truth for how
:func:`actors.upstream.aider.classify.classify_aider_history` decides every block the
real tool wrote into ``.aider.chat.history.md``: typed prompts, ``/ask`` with a
question, a shell command the model proposed (two of them: the first answered
"skip all", so Aider writes the second question and its answer as user
input), one answered "yes", ``/run``, ``/clear``, an interrupt (Ctrl-C), and a
program-driven run (``aider --message``) appended to the same file. The same
actions end to end through ``ssa watch --aider <repository>`` beside it: one
``human_direct_message`` per typed turn (each waited for before the next
action), none for the rest.
"""

from __future__ import annotations

import secrets

import pytest

from actors.upstream.aider.classify import aider_sessions
from tests.harness import Agent, Aider, Harness, Text, compare
from tests.harness import actions as act
from tests.harness.fixtures import REQUIRED
from tests.harness.pyinstall import aider_dir, installed_aider
from tests.harness.watch import compare_watch

pytestmark = [pytest.mark.agents, pytest.mark.timeout(240)]


@pytest.fixture(autouse=True)
def _aider() -> None:
    if installed_aider() is None:
        reason = (f"Aider is not installed at {aider_dir()} "
                  "(run: python -m tests.harness.pyinstall)")
        if REQUIRED:
            pytest.fail(f"CI: {reason}", pytrace=False)
        pytest.skip(reason)


QUESTION = "Run shell command? (Y)es/(N)o"
ADD_OUTPUT = "output to the chat? (Y)es/(N)o"


def _count(agent: Agent, needle: str) -> int:
    return agent.pane.screen(history=True).count(needle)


def _answer_if_asked(agent: Agent, needle: str, before: int, key: str) -> bool:
    """Answer a new occurrence of ``needle`` with ``key`` when Aider asks it before it is
    back at its prompt; returns whether it asked (unrecorded: the caller records it).

    Aider asks to add a command's output only when it caught some: it reads the
    command through ``pexpect``'s ``interact``, which now and then misses the output
    of a command that exits at once (seen here: "Running echo ..." and straight back
    to ``diff>``). The commands sleep a moment after their output to make that rare.
    """
    def back_at_prompt(screen: str) -> bool:  # an empty prompt: the command line is done
        lines = [line for line in screen.splitlines() if line.strip()]
        return bool(lines) and lines[-1].strip() == "diff>"

    agent.pane.wait_screen(lambda s: _count(agent, needle) > before or back_at_prompt(s),
                           Aider.turn_timeout_s, f"question {needle!r} or the prompt")
    agent.pane.wait_quiet(0.4, 10.0)
    if _count(agent, needle) <= before:
        return False
    agent.keys(key, "Enter")
    return True


def _answer(agent: Agent, needle: str, before: int, key: str) -> None:
    """Wait for a new occurrence of question ``needle`` (``before`` seen so far), then
    answer it with ``key`` + Enter (unrecorded: the caller records the action)."""
    agent.pane.wait_screen(lambda _s: _count(agent, needle) > before, Aider.turn_timeout_s,
                           f"question {needle!r}")
    agent.pane.wait_quiet(0.4, 10.0)
    agent.keys(key, "Enter")


def test_typed_commands_confirmations_interrupt_and_message_run(agent_harness: Harness
                                                                 ) -> None:
    nonce = secrets.token_hex(4)
    project = agent_harness.project(git=True)
    # ssa watch beside it: Aider has no standard location, so the repository is named.
    watch = agent_harness.watch(args=["--aider", str(project)])
    aider = agent_harness.start("aider", project=project)
    log = agent_harness.log

    aider.script(Text(f"answer one {nonce}"))
    aider.prompt(f"hello one {nonce}")
    watch.wait_turns(1)

    question = f"what does the readme say {nonce}"
    aider.script(Text(f"ask answer {nonce}"))
    aider.slash(f"/ask {question}", human=True, text=question)
    aider.wait_request(question)
    aider.wait_turn()
    watch.wait_turns(2)

    # Two proposed commands; "s" (skip all) on the first makes Aider answer the second
    # itself and write that question and "skip" as user input ("#### Run shell ...: skip").
    first, second = f"echo first-{nonce}", f"echo second-{nonce}"
    aider.script(Text(f"Run these:\n\n```bash\n{first}\n```\n\nand\n\n```bash\n{second}\n```\n"))
    log.record(aider.name, "aider", act.SHELL_CALL, first)
    log.record(aider.name, "aider", act.SHELL_CALL, second)
    aider.type(f"please run two commands {nonce}")
    _answer(aider, QUESTION, _count(aider, QUESTION), "s")
    log.record(aider.name, "aider", act.CONFIRM, "(D)on't ask again [Yes]: skip", answer="s")
    aider.wait_idle()
    watch.wait_turns(3)

    # One proposed command answered "y": it runs; its output is not added.
    single = f"echo single-{nonce}; sleep 1"
    aider.script(Aider.shell_text(single))
    log.record(aider.name, "aider", act.SHELL_CALL, single)
    asked = _count(aider, ADD_OUTPUT)
    aider.type(f"please run one command {nonce}")
    _answer(aider, QUESTION, _count(aider, QUESTION), "y")
    log.record(aider.name, "aider", act.CONFIRM, "(D)on't ask again [Yes]: y", answer="y")
    if _answer_if_asked(aider, ADD_OUTPUT, asked, "n"):  # "Add command output to the chat?"
        log.record(aider.name, "aider", act.CONFIRM, None, answer="n")
    aider.wait_idle()
    watch.wait_turns(4)

    asked = _count(aider, ADD_OUTPUT)
    aider.slash(f"/run echo typed-run-{nonce}; sleep 1", text=f"typed-run-{nonce}",
                kind=act.SHELL_CALL)
    # "Add 0.0k tokens of command output to the chat?"
    if _answer_if_asked(aider, ADD_OUTPUT, asked, "n"):
        log.record(aider.name, "aider", act.CONFIRM, None, answer="n")
    aider.wait_idle()
    aider.slash("/clear")
    aider.wait_idle()

    aider.script(Text(" ".join(["slow"] * 200), chunk_delay_s=0.1))
    aider.type(f"interrupt me {nonce}")
    aider.wait_request(f"interrupt me {nonce}")
    aider.pane.wait_text("slow slow", Aider.turn_timeout_s)
    aider.interrupt("C-c")
    aider.pane.wait_text("^C again to exit", Aider.turn_timeout_s)
    aider.wait_idle()
    watch.wait_turns(5)
    aider.script(Text(f"after {nonce}"))
    aider.prompt(f"typed after the interrupt {nonce}")
    watch.wait_turns(6)
    assert aider.quit() is not None, aider.screen()

    run = agent_harness.run_program("aider", f"program prompt {nonce}", project=project,
                                    model=aider.model)
    assert run.returncode == 0, run.stderr
    assert not aider.model.problems
    watch.settle()

    (history,) = aider.transcripts()
    result = compare(aider.decided_rows(), log.actions(tool="aider"))
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 6, result.report()
    reasons = {r.reason for r in result.rows if r.kind == "user"}
    assert {"typed", "command_echo", "confirm_answer", "shell", "slash_command",
            "program_session"} <= reasons, result.report()
    skip_echo = [r for r in result.rows if r.kind == "user" and r.holds("[Yes]: skip")]
    assert [r.reason for r in skip_echo] == ["confirm_answer"], result.report()
    sessions = aider_sessions(history.read_bytes())
    assert [s.program for s in sessions] == [False, True], sessions

    # ssa watch: one notice per typed turn, none for the rest (the --message run included).
    seen = compare_watch(watch.events(), log.actions(tool="aider"))
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
    assert [e.turns for e in seen.events] == [1] * 6, seen.report()
