"""Codex 0.171.0: prompts another program (or a hook) put into a running session (issue 22,
class 4), decided through ``ssa classify``'s code path and through ``ssa watch --json``.

* ``codex queue --thread ID --message TEXT`` stores the message in
  ``$CODEX_HOME/queue_1.sqlite`` (``queued_items``) and prints ``Queued message <id>
  for thread <id>.``; the running TUI picks it up within seconds (no daemon needed),
  runs a turn on it once the thread is idle, and deletes the queue row. The turn's
  ``task_started`` says ``turn_attribution.turn_trigger: "queue"`` (a typed prompt's
  says ``"user"``): the message is ``queued_message``
  (:mod:`actors.upstream.codex.turns`). The action log records it as a
  ``program_run``: no person typed it. The composer's history
  (``$CODEX_HOME/history.jsonl``) holds the typed prompts and not the queued one;
  with ``[history] persistence = "none"`` there is no such file, and the decision
  is the same.
* A Stop hook in ``$CODEX_HOME/hooks.json`` that answers ``{"decision": "block",
  "reason": ...}`` makes Codex go on in the same turn with the reason as a new prompt:
  a ``HookPrompt`` item (``hook_prompt``) and a ``<hook_prompt>`` user message. The
  action log records it as a ``hook_prompt`` action: no person typed it.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from tests.harness import Agent, Harness, Home, Setup, Text, compare, merge_json
from tests.harness import actions as act
from tests.harness.watch import SsaWatch, compare_watch

pytestmark = [pytest.mark.agents, pytest.mark.timeout(180)]


@pytest.fixture(autouse=True)
def _codex(require_tool: object) -> None:
    require_tool("codex")  # type: ignore[operator]


def _typed(agent: Agent, watch: SsaWatch, text: str, answer: str) -> None:
    """Type one prompt, wait for its turn and for ``ssa watch`` to report it."""
    before = watch.human_turns()
    agent.script(Text(answer))
    agent.prompt(text)
    watch.wait_turns(before + 1)


def _no_history(home: Home, project: Path) -> None:
    del project
    config = home.root / ".codex" / "config.toml"
    config.write_text(config.read_text() + '\n[history]\npersistence = "none"\n')


def _history(home: Home) -> Path:
    return home.root / ".codex" / "history.jsonl"


def _history_texts(home: Home, count: int, timeout_s: float = 10.0) -> list[str]:
    """The texts of ``history.jsonl`` once it holds ``count`` entries (it is written
    asynchronously); whatever it holds after ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        path = _history(home)
        texts = ([json.loads(line)["text"] for line in path.read_text().splitlines()]
                 if path.exists() else [])
        if len(texts) >= count or time.monotonic() > deadline:
            return texts
        time.sleep(0.1)


@pytest.mark.parametrize("persistence", ["save-all", "none"])
def test_a_queued_message_is_not_typed(agent_harness: Harness, persistence: str) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    watch = agent_harness.watch(home)
    codex = agent_harness.start("codex", home=home,
                                setup=_no_history if persistence == "none" else None)
    _typed(codex, watch, f"typed one {nonce}", f"answer {nonce}")
    (path,) = codex.transcripts()
    thread = json.loads(path.read_text().splitlines()[0])["payload"]["id"]

    text = f"queued by a program {nonce}"
    codex.script(Text(f"queued answer {nonce}"))
    argv = [str(agent_harness.install.binary("codex")), "queue", "--thread", thread,
            "--message", text]
    agent_harness.log.record("codex-queue", "codex", act.PROGRAM_RUN, text, argv=argv)
    done = subprocess.run(argv, env=codex.tool.env(home, codex.model, agent_harness.install),
                          cwd=codex.project, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert f"for thread {thread}" in done.stdout, done.stdout
    codex.wait_request(text)
    codex.wait_turn()
    watch.settle()
    _typed(codex, watch, f"typed two {nonce}", f"answer two {nonce}")
    watch.settle()

    actions = agent_harness.log.actions(tool="codex")
    result = compare(codex.decided_rows(), actions)
    assert not result.unseen, result.report()
    assert len(result.true_positives) == 2, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    queued = [(r.kind, r.reason) for r in result.rows_of(actions[-2]) if not r.human]
    assert ("event_msg:item_completed", "queued_message") in queued, result.report()

    seen = compare_watch(watch.events(), actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
    assert [e.turns for e in seen.events] == [1, 1], seen.report()

    if persistence == "none":
        assert not _history(home).exists()
    else:  # the composer's history: the typed prompts, not the queued message
        assert _history_texts(home, 2) == [f"typed one {nonce}", f"typed two {nonce}"]


def _stop_hook(reason: str) -> Setup:
    """A setup writing a Stop hook that blocks once with ``reason``, then lets Codex stop."""

    def setup(home: Home, project: Path) -> None:
        del project
        hook = home.root / "stop-hook.sh"
        hook.write_text("#!/bin/sh\ncat >/dev/null\n"
                        'if [ -e "$HOME/stop-hook-ran" ]; then echo "{}"; exit 0; fi\n'
                        'touch "$HOME/stop-hook-ran"\n'
                        f"echo '{json.dumps({'decision': 'block', 'reason': reason})}'\n")
        hook.chmod(0o755)
        merge_json(home.root / ".codex" / "hooks.json", {"hooks": {"Stop": [
            {"hooks": [{"type": "command", "command": str(hook), "timeout": 10}]}]}})

    return setup


def test_a_stop_hooks_continuation_prompt_is_not_typed(agent_harness: Harness) -> None:
    nonce = secrets.token_hex(4)
    home = agent_harness.home()
    watch = agent_harness.watch(home)
    reason = f"a stop hook says go on {nonce}"
    # A person trusts a new hook once, in Codex's /hooks; automation skips that.
    codex = agent_harness.start("codex", home=home, setup=_stop_hook(reason),
                                args=["--dangerously-bypass-hook-trust"])
    agent_harness.log.record(codex.name, "codex", act.HOOK_PROMPT, reason, event="Stop")
    codex.script(Text(f"answer {nonce}"), Text(f"after the hook {nonce}"))
    codex.prompt(f"typed {nonce}")  # waits until both answers went out: the hook's too
    codex.wait_request(reason)
    watch.wait_turns(1)
    watch.settle()

    actions = agent_harness.log.actions(tool="codex")
    result = compare(codex.decided_rows(), actions)
    assert not result.unseen, result.report()
    assert len(result.true_positives) == 1, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    hook_rows = {(r.kind, r.reason) for r in result.rows_of(actions[0])}
    assert ("event_msg:item_completed", "hook_prompt") in hook_rows, result.report()

    seen = compare_watch(watch.events(), actions)
    assert (seen.precision, seen.recall) == (1.0, 1.0), seen.report()
    assert [e.turns for e in seen.events] == [1], seen.report()
