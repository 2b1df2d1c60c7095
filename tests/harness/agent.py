"""Drivers: a tool's TUI in tmux (:class:`Agent`) and a program-driven run (:class:`ProgramRun`).

Every step a driver takes is recorded in the harness's :class:`ActionLog`.
All methods run in the test's thread and block for at most their timeout.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType

from tests.harness import actions as act
from tests.harness.actions import Action, ActionLog
from tests.harness.home import Home
from tests.harness.models import FakeModelServer, ModelRequest
from tests.harness.script import Answer, Text
from tests.harness.tmux import Pane
from tests.harness.tools import AgentTool, DecidedRow

__all__ = ["Agent", "ProgramRun"]

log = logging.getLogger(__name__)

QUIET_S = 0.4
"""Seconds without screen output after which a TUI that looks idle is idle."""


class Agent:
    """One coding agent's TUI running in tmux, talking to its own fake model server.

    Attributes:
        name: the driver's name in the action log.
        tool: the :class:`AgentTool` profile.
        home, project: its ``HOME`` and working directory.
        model: the fake model server it talks to.
        pane: its tmux pane.
    """

    def __init__(self, *, name: str, tool: AgentTool, home: Home, project: Path,
                 model: FakeModelServer, pane: Pane, log: ActionLog) -> None:
        self.name, self.tool, self.home, self.project = name, tool, home, project
        self.model, self.pane, self._log = model, pane, log

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, {self.tool.name}, {self.pane.pane_id})"

    def _record(self, kind: str, text: str | None = None, *, human: bool = False,
                **detail: object) -> Action:
        return self._log.record(self.name, self.tool.name, kind, text, human=human, **detail)

    def record(self, kind: str, text: str | None = None, *, human: bool = False,
               **detail: object) -> Action:
        """Record an action taken by other means (keys a profile sent itself) in the log."""
        return self._record(kind, text, human=human, **detail)

    # -- what a person does ------------------------------------------------------------------

    def type(self, text: str, *, enter: bool = True) -> Action:
        """Type ``text`` (and press Enter): a prompt a person typed (``human`` action).

        Enter goes only after the tool has echoed the text and gone quiet for
        :data:`QUIET_S` (a key pressed in the same burst may be taken for part of
        a paste). Does not wait for the turn; see :meth:`prompt`.

        Raises:
            TmuxError: tmux failed.
            TimeoutError: the tool kept redrawing for 10 s after the text.
        """
        seen = self.pane.server.output_count()
        self.pane.send_text(text)
        if enter:
            self.pane.server.wait_output(seen, 5.0)
            self.pane.wait_quiet(QUIET_S, 10.0)
            self.pane.send_keys("Enter")
        return self._record(act.TYPED, text, human=True)

    def prompt(self, text: str, *, timeout_s: float | None = None, answers_left: int = 0
               ) -> ModelRequest:
        """Type ``text`` + Enter and wait for the whole turn; returns its first main request.

        Waits until a new main request holding ``text`` reached the fake server,
        until the script is down to ``answers_left`` answers with every response
        written, and until the TUI is idle.

        ``timeout_s`` defaults to the tool's ``turn_timeout_s``.

        Raises:
            TimeoutError: any of those did not happen within ``timeout_s`` seconds.
        """
        timeout_s = timeout_s if timeout_s is not None else self.tool.turn_timeout_s
        before = len(self.model.main_requests())
        self.type(text)
        first = self.wait_request(text, after=before, timeout_s=timeout_s)
        self.wait_turn(timeout_s=timeout_s, answers_left=answers_left)
        return first

    def slash(self, command: str, *, settle_s: float = 0.5, human: bool = False,
              kind: str = act.SLASH, text: str | EllipsisType | None = ...,
              enter: tuple[str, ...] = ("Enter",)) -> Action:
        """Choose a slash command: type ``command`` (``/compact``...), let the completion
        menu settle, press ``enter`` (tmux key names). ``human`` says whether the tool
        should count it; ``kind`` is the action's kind (``compact`` for ``/compact``);
        ``text`` is what its rows must hold (default ``command`` itself; ``None``: no
        text of its own, e.g. a command whose rows do not name it).

        Does not wait for what the command does (see :meth:`wait_idle`).

        Raises:
            TmuxError: tmux failed.
            TimeoutError: the tool kept redrawing for 10 s after the text.
        """
        self._choose(command, settle_s, enter)
        return self._record(kind, command if text is ... else text, human=human,
                            command=command.split(maxsplit=1)[0])

    def _choose(self, command: str, settle_s: float, enter: tuple[str, ...]) -> None:
        self.pane.send_text(command)
        self.pane.wait_quiet(settle_s, 10.0)
        self.pane.send_keys(*enter)

    def compact(self, command: str = "/compact", *, timeout_s: float | None = None,
                enter: tuple[str, ...] = ("Enter",)) -> Action:
        """Ask for a compaction with ``command``; wait for its model request to be
        answered and the TUI to be idle again.

        The summary request takes the next scripted answer when it offers tools
        (Claude Code's, Codex's), else the server's fixed side answer. The action
        (``compact``, not ``human``) has no text: what the tool writes for it
        holds earlier prompts, which must not be decided typed a second time.

        Raises:
            TimeoutError: the TUI was not idle within ``timeout_s`` (default: the
                tool's ``turn_timeout_s``).
        """
        limit = timeout_s if timeout_s is not None else self.tool.turn_timeout_s
        before = len(self.model.requests)
        self._choose(command, 0.5, enter)
        action = self._record(act.COMPACT, None, command=command)
        self.model.wait(lambda reqs: len(reqs) > before and all(r.done.is_set() for r in reqs),
                        limit, "the compaction's request")
        self.wait_idle(limit)
        return action

    def interrupt(self, key: str = "Escape") -> Action:
        """Press ``key`` (``Escape``, ``C-c``) to interrupt the running turn."""
        self.pane.send_keys(key)
        return self._record(act.INTERRUPT, None, key=key)

    def keys(self, *keys: str) -> None:
        """Press tmux key names, unrecorded (menu navigation and the like)."""
        self.pane.send_keys(*keys)

    # -- scripted model answers --------------------------------------------------------------

    def script(self, *answers: Answer) -> None:
        """Queue raw answers at its fake model server (unrecorded)."""
        self.model.script(*answers)

    def script_shell(self, command: str, then: str = "The command ran.") -> Action:
        """Script a shell tool call running ``command``, then the reply ``then``.

        The action's text is ``command``: rows holding it (the call, its result)
        must not be decided typed.
        """
        self.model.script(self.tool.shell(command), Text(then))
        return self._record(act.SHELL_CALL, command)

    def script_subagent(self, prompt: str, *sub_answers: Answer, then: str = "Sub-agent done."
                        ) -> Action:
        """Script a sub-agent start with ``prompt``, the sub-agent's own answers
        (default: one text), then the parent's reply ``then``.

        Raises:
            NotImplementedError: the tool has no sub-agent tool.
        """
        answers = sub_answers or (Text("Sub-agent reporting back."),)
        self.model.script(self.tool.subagent(prompt), *answers, Text(then))
        return self._record(act.SUBAGENT, prompt)

    def script_mcp(self, server: str, tool: str, arguments: dict[str, object] | None = None,
                   then: str = "The MCP tool answered.") -> Action:
        """Script a call of MCP ``server``'s ``tool``, then the reply ``then``."""
        from tests.harness.script import ToolUse

        self.model.script(ToolUse(self.tool.mcp_tool(server, tool), arguments or {}), Text(then))
        return self._record(act.MCP_CALL, None, server=server, mcp_tool=tool)

    # -- waiting and reading -----------------------------------------------------------------

    def wait_request(self, needle: str, *, after: int = 0, timeout_s: float | None = None
                     ) -> ModelRequest:
        """Block until a main request after the first ``after`` ones holds ``needle``.

        Raises:
            TimeoutError: not within ``timeout_s`` seconds (default: the tool's
                ``turn_timeout_s``).
        """
        limit = timeout_s if timeout_s is not None else self.tool.turn_timeout_s

        def found(reqs: list[ModelRequest]) -> bool:
            mains = [r for r in reqs if r.kind == "main"][after:]
            return any(r.has_text(needle) for r in mains)

        reqs = self.model.wait(found, limit, f"main request holding {needle!r}")
        return next(r for r in [r for r in reqs if r.kind == "main"][after:]
                    if r.has_text(needle))

    def wait_turn(self, *, timeout_s: float | None = None, answers_left: int = 0) -> str:
        """Block until the script is down to ``answers_left``, every main response is
        written, and the TUI is idle; returns the screen.

        Raises:
            TimeoutError: not within ``timeout_s`` seconds (default: the tool's
                ``turn_timeout_s``).
        """
        limit = timeout_s if timeout_s is not None else self.tool.turn_timeout_s
        self.model.wait(lambda reqs: self.model.pending <= answers_left
                        and all(r.done.is_set() for r in reqs if r.kind == "main"),
                        limit, f"the turn's answers (leaving {answers_left})")
        return self.wait_idle(limit)

    def wait_ready(self, timeout_s: float | None = None) -> str:
        """Block until the TUI takes input; returns the screen.

        Raises:
            TimeoutError: not within the tool's start-up timeout.
        """
        limit = timeout_s if timeout_s is not None else self.tool.startup_timeout_s
        self.pane.wait_screen(self.tool.ready, limit, f"{self.tool.name} ready")
        screen = self.pane.wait_quiet(max(QUIET_S, self.tool.ready_quiet_s), limit)
        if not self.tool.ready(screen):  # it cleared and redrew: wait for the new frame
            self.pane.wait_screen(self.tool.ready, limit, f"{self.tool.name} ready")
            screen = self.pane.wait_quiet(max(QUIET_S, self.tool.ready_quiet_s), limit)
        return screen

    def wait_idle(self, timeout_s: float | None = None) -> str:
        """Block until the TUI is ready, not busy, and quiet for a moment; returns the screen.

        Raises:
            TimeoutError: not within ``timeout_s`` seconds (default: the tool's
                ``turn_timeout_s``).
        """
        limit = timeout_s if timeout_s is not None else self.tool.turn_timeout_s
        while True:
            self.pane.wait_screen(lambda s: self.tool.ready(s) and not self.tool.busy(s),
                                  limit, f"{self.tool.name} idle")
            screen = self.pane.wait_quiet(QUIET_S, limit)
            if self.tool.ready(screen) and not self.tool.busy(screen):
                return screen

    def screen(self, *, history: bool = False) -> str:
        """The TUI's screen as text (``history``: with scroll-back)."""
        return self.pane.screen(history=history)

    def quit(self, timeout_s: float = 15.0) -> int | None:
        """Send the tool's quit keys and wait for it to exit; returns its exit status
        (``None`` when it did not exit in time; teardown kills it anyway)."""
        for group in self.tool.quit_keys:
            if self.pane.dead() is not None:
                break
            self.pane.send_keys(*group)
            with contextlib.suppress(TimeoutError):
                self.pane.wait_quiet(QUIET_S, 5.0)
        with contextlib.suppress(TimeoutError):
            self.pane.wait_screen(lambda _s: self.pane.dead() is not None, timeout_s, "exit")
        return self.pane.dead()

    # -- transcripts -------------------------------------------------------------------------

    def transcripts(self) -> list[Path]:
        """The transcripts the tool wrote for this project under its home."""
        return self.tool.transcripts(self.home, self.project)

    def decided_rows(self) -> list[DecidedRow]:
        """Every unit of those transcripts, decided through ``ssa classify``'s code path."""
        return [row for path in self.transcripts()
                for row in self.tool.decide(path, self.project)]


@dataclass(frozen=True)
class ProgramRun:
    """A finished program-driven run (``claude -p``, ``codex exec``...).

    Attributes:
        argv: its command line.
        returncode: its exit status.
        stdout, stderr: its output.
        action: its entry in the action log.
    """

    argv: Sequence[str]
    returncode: int
    stdout: str
    stderr: str
    action: Action
