"""The real-agent harness: the real coding-agent CLIs, driven in tmux, against fake models.

The four CLIs are installed at pinned versions (``tests/agents``, see
:mod:`tests.harness.install`); each runs with a throw-away ``HOME`` against
a fake model server of the test's own on 127.0.0.1 that answers from a
script and records every request (:mod:`tests.harness.models`). What the
harness does to a tool goes into an action log (:mod:`tests.harness.actions`),
the ground truth that :func:`compare` checks ``ssa classify``'s decisions on
the tool's own transcript against.

Usage (in a test; the ``agent_harness`` fixture makes the :class:`Harness`,
installs nothing itself, and skips, or fails under ``CI=true``, when the
CLIs or tmux are missing)::

    def test_typed(agent_harness: Harness) -> None:
        home = agent_harness.home()                  # <tmp>/home, XDG dirs inside
        project = agent_harness.project(git=True)    # <tmp>/project

        def add_hook(home: Home, project: Path) -> None:   # runs before the tool starts
            merge_json(ClaudeCode.settings_path(home), {"hooks": {...}})

        claude = agent_harness.start("claude", home=home, project=project, setup=add_hook)
        claude.script(Text("first answer"))          # answers for main requests, in order
        claude.prompt("hello 1f3a")                  # type + Enter, wait for the whole turn
        claude.script_shell("echo marker-77")        # a Bash tool call, then a text
        claude.prompt("run it 1f3a")
        request = claude.model.wait_main(3)          # the 3rd main request (answered)
        assert "marker-77" in request.text()         # what the tool sent to the model
        result = compare(claude.decided_rows(), agent_harness.log.actions(agent="claude"))
        assert (result.precision, result.recall) == (1.0, 1.0), result.report()

        worker = agent_harness.start("codex", home=home, project=project, name="worker")
        agent_harness.run_program("claude", "print-mode prompt 1f3a", home=home)

Pieces:

* :class:`Harness` (:mod:`tests.harness.session`): ``home()``, ``project()``,
  ``model(api)``, ``start(tool, ...)`` -> :class:`Agent`, ``reopen(agent, kind,
  args)`` (quit and start again on the same home, project and fake server:
  ``resume``/``continue``/``fork``), ``run_program(tool, prompt, ...)`` and
  ``run_rpc(prompts, ...)`` (``pi --mode rpc``) -> :class:`ProgramRun`,
  ``watch(home)`` -> :class:`SsaWatch`, ``log`` (the :class:`ActionLog`),
  ``close()`` (kills the tmux server, every child process, ``ssa watch``, the
  fake servers).
* :class:`SsaWatch` (:mod:`tests.harness.watch`): ``ssa watch --json`` in the
  tools' home; ``events()``, ``human_turns()``, ``wait_turns(n)``,
  ``settle()``; :func:`compare_watch` checks its ``human_direct_message``
  events against the action log.
* :class:`Agent` (:mod:`tests.harness.agent`): ``type``, ``prompt``,
  ``slash``, ``compact``, ``interrupt``, ``keys``, ``script*``, ``wait_request``,
  ``wait_turn``, ``wait_idle``, ``screen``, ``quit``, ``transcripts``,
  ``decided_rows``; ``agent.model`` is its :class:`FakeModelServer`
  (``script``, ``requests``, ``main_requests``, ``wait_main(n)``,
  ``problems``).
* Answers (:mod:`tests.harness.script`): :class:`Text`, :class:`ToolUse`,
  :class:`Fail`, each with ``delay_s``; the tool profiles build the
  tool-specific calls (``agent.tool.shell(cmd)``, ``.subagent(prompt)``,
  ``.mcp_tool(server, tool)``).
* Tool profiles (:mod:`tests.harness.tools`): config, command lines, screen
  states and transcript locations of each CLI.

Only ``main`` requests (generation requests that offer tools) take scripted
answers; titles, summaries, token counts and model lists are answered
without touching the script (see :mod:`tests.harness.models._server`).
Every wait has a timeout and raises :class:`TimeoutError` with the screen or
the requests seen. Nothing here is thread-safe beyond what each class says:
one test thread drives a harness.
"""

from __future__ import annotations

from tests.harness.actions import Action, ActionLog
from tests.harness.agent import Agent, ProgramRun
from tests.harness.compare import Comparison, compare
from tests.harness.home import Home, merge_json, write_private
from tests.harness.install import AgentInstall, InstallError, install, installed
from tests.harness.models import FakeModelServer, ModelRequest
from tests.harness.script import Answer, Fail, Text, ToolUse
from tests.harness.session import Harness, Setup
from tests.harness.tools import (
    TOOLS,
    AgentTool,
    Aider,
    ClaudeCode,
    Codex,
    DecidedRow,
    GeminiCli,
    OpenCode,
    Pi,
    QwenCode,
    tool_named,
)
from tests.harness.watch import SsaWatch, WatchComparison, WatchEvent, compare_watch

__all__ = [
    "TOOLS",
    "Action",
    "ActionLog",
    "Agent",
    "AgentInstall",
    "AgentTool",
    "Aider",
    "Answer",
    "ClaudeCode",
    "Codex",
    "Comparison",
    "DecidedRow",
    "Fail",
    "FakeModelServer",
    "GeminiCli",
    "Harness",
    "Home",
    "InstallError",
    "ModelRequest",
    "OpenCode",
    "Pi",
    "ProgramRun",
    "QwenCode",
    "Setup",
    "SsaWatch",
    "Text",
    "ToolUse",
    "WatchComparison",
    "WatchEvent",
    "compare",
    "compare_watch",
    "install",
    "installed",
    "merge_json",
    "tool_named",
    "write_private",
]
