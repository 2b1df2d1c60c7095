"""A test kit for suites that embed the gateway: a clock to move, fixtures, leak checks.

May import: the facade through :mod:`actors`, the engine (the leak check's
actor base and open-gateway list), the builders of :mod:`actors.upstream.kit`
(re-exported here) and :mod:`persistence`'s public names; never the command
line or the agent integrations.

* :class:`ManualClock`: epoch milliseconds that move only when the test says
  (``advance(ms)``, ``set(ms)``); pass it as ``Gateway.open(clock=...)`` or
  ``AsyncGateway.open(clock=...)``.
* :class:`LeakCheck` and :func:`running_actors`: fail a test that leaves one
  of the library's actors or a thread running.
* Transcript builders that write the real on-disk rows of another coding
  agent, to test "a person typed into the adopted session" end to end with
  ``Gateway.adopt`` and ``scan_upstream()``: :class:`ClaudeCodeTranscript`,
  :class:`CodexRollout`, :class:`OpenCodeTranscript` (an ``opencode.db``
  store), :class:`PiSession`, :class:`GeminiSession` (with
  :func:`gemini_logs_json` for a ``logs.json`` of its own),
  :class:`QwenSession`, :class:`CrushTranscript` (a ``crush.db`` store) and
  :class:`AiderChatHistory`, each fed the turns
  :class:`Typed`, :class:`Reply`, :class:`ToolCall`, :class:`ToolResult`,
  :class:`SlashCommand`, :class:`Interrupt`, :class:`Compaction`,
  :class:`SubagentRow` and :class:`ImageOnly`; :class:`CodexRollout` also
  takes :class:`QueuedMessage` (``codex queue``), :class:`Steer` and
  :class:`HookContinuation` (a Stop hook's continuation prompt).
* A pytest plugin, off unless the suite asks for it (``-p actors.testing`` on
  the command line, ``addopts = "-p actors.testing"``, or ``ssa_fixtures =
  true`` in the pytest ini). Its fixtures:

  * ``ssa_clock``: a fresh :class:`ManualClock`;
  * ``ssa_gateway``: a :class:`~actors.Gateway` on a SQLite file under
    ``tmp_path``, ``monitor=False``, on ``ssa_clock``; closed at teardown,
    and the test fails if any of our actors or threads survive it;
  * ``ssa_async_gateway``: the same as an :class:`~actors.AsyncGateway`, opened
    on the test's event loop (an async fixture: mark the test
    ``@pytest.mark.anyio``, or use pytest-asyncio in auto mode without that
    mark);
  * ``ssa_gateway_options``: extra ``open`` arguments for both (``on_wake``,
    ``config``, ``hosts``...); empty unless a suite overrides it.

  Only what a test started counts as its leak: a wider-scoped fixture's
  gateway is left alone.

Importing this module registers nothing; everything here is safe to use
from any thread unless a docstring says otherwise. PYTEST_DONT_REWRITE: a
conftest may import the kit before pytest registers it as a plugin (without
this marker pytest warns that it cannot rewrite it; the kit reports with
``pytest.fail``, not ``assert``).
"""

from __future__ import annotations

from actors.testing._leaks import LeakCheck, running_actors
from actors.upstream.aider.kit import AiderChatHistory
from actors.upstream.claude.kit import ClaudeCodeTranscript
from actors.upstream.codex.kit import CodexRollout, HookContinuation, QueuedMessage, Steer
from actors.upstream.crush.kit import CrushTranscript
from actors.upstream.gemini.kit import GeminiSession, gemini_logs_json
from actors.upstream.kit.clock import DEFAULT_START_MS, ManualClock
from actors.upstream.kit.turns import (
    Compaction,
    ImageOnly,
    Interrupt,
    Reply,
    SlashCommand,
    SubagentRow,
    ToolCall,
    ToolResult,
    Turn,
    Typed,
)
from actors.upstream.opencode.kit import OpenCodeTranscript
from actors.upstream.pi.kit import PiSession
from actors.upstream.qwen.kit import QwenSession

__all__ = ["DEFAULT_START_MS", "AiderChatHistory", "ClaudeCodeTranscript", "CodexRollout",
           "Compaction", "CrushTranscript", "GeminiSession", "HookContinuation", "ImageOnly",
           "Interrupt", "LeakCheck", "ManualClock", "OpenCodeTranscript", "PiSession",
           "QueuedMessage", "QwenSession", "Reply", "SlashCommand", "Steer", "SubagentRow",
           "ToolCall", "ToolResult", "Turn", "Typed", "gemini_logs_json", "running_actors"]

try:  # the fixtures need pytest; the clock and the leak check do not
    from actors.testing._fixtures import (
        ssa_async_gateway,
        ssa_clock,
        ssa_gateway,
        ssa_gateway_options,
    )
except ImportError:  # pragma: no cover - pytest is not installed
    pass
else:
    __all__ += ["ssa_async_gateway", "ssa_clock", "ssa_gateway", "ssa_gateway_options"]
