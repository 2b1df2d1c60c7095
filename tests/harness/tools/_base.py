"""What the harness needs to know about one coding-agent CLI: :class:`AgentTool`."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from actors.upstream.classify import classify_units
from tests.harness.home import Home
from tests.harness.install import AgentInstall
from tests.harness.models import FakeModelServer
from tests.harness.script import ToolUse

__all__ = ["AgentTool", "DecidedRow", "jsonl_rows", "string_values"]


@dataclass(frozen=True)
class DecidedRow:
    """One unit of a transcript and how ``ssa classify``'s code path decided it.

    Attributes:
        tool: the ``ssa classify`` source (``claude``, ``codex``, ``opencode``, ``pi``).
        path: the transcript file (OpenCode: ``opencode.db``).
        unit: the line index (JSONL) or message id (OpenCode).
        session: the OpenCode session id, else ``None``.
        human: the decision (``True``: a person typed it).
        reason: the classifier's reason.
        kind: the row's own kind (``user``, ``attachment:queued_command``,
            ``event_msg:user_message``, ``message:user``...), for reports.
        texts: every string value of the row (what an action's text is searched in).
    """

    tool: str
    path: Path
    unit: int | str
    session: str | None
    human: bool
    reason: str
    kind: str
    texts: tuple[str, ...]

    def holds(self, needle: str) -> bool:
        """Whether one of the row's strings contains ``needle``."""
        return any(needle in text for text in self.texts)


def string_values(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (keys excluded), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from string_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from string_values(item)


def jsonl_rows(tool: str, path: Path, kind_of: Any) -> list[DecidedRow]:
    """Decide every line of a JSONL transcript with ``classify_units`` (``ssa classify``).

    ``kind_of(row) -> str`` names a parsed row's kind. Blocks while reading the file.

    Raises:
        SessionStateError: the file cannot be read.
    """
    lines = path.read_bytes().split(b"\n")
    out: list[DecidedRow] = []
    for unit in classify_units(tool, str(path)):
        index = int(unit["line"])
        try:
            row: Any = json.loads(lines[index])
        except ValueError:
            row = None
        out.append(DecidedRow(tool, path, index, None, bool(unit["human"]), str(unit["reason"]),
                              kind_of(row) if isinstance(row, dict) else "not-json",
                              tuple(string_values(row))))
    return out


class AgentTool(ABC):
    """One coding-agent CLI: its config, its command lines, its screens, its transcripts.

    Subclasses are stateless; every method runs in the caller's thread and
    only :meth:`configure` and :meth:`transcripts` touch the file system.
    """

    name: ClassVar[str]
    """The ``ssa classify --source`` name."""
    api: ClassVar[str]
    """The fake model API it talks to: ``anthropic``, ``responses`` or ``chat``."""
    binary: ClassVar[str]
    """Its executable in the install's ``node_modules/.bin``."""
    version: ClassVar[str]
    """The pinned version (``tests/agents/package.json``)."""
    startup_timeout_s: ClassVar[float] = 45.0
    """How long its TUI may take to become ready, in seconds."""
    ready_quiet_s: ClassVar[float] = 0.4
    """How long the screen must stay unchanged after :meth:`ready` first holds before
    the TUI is taken to accept keys, in seconds (a TUI that clears and redraws once
    after its first frame drops the keys typed in between)."""
    turn_timeout_s: ClassVar[float] = 30.0
    """How long one turn's wait (a request to arrive, the TUI to go idle) may take, in seconds."""

    @abstractmethod
    def configure(self, home: Home, project: Path, model: FakeModelServer) -> None:
        """Write the config that points it at ``model`` with no dialogs, merging into
        what ``home`` already holds (a second tool or a test's own keys stay)."""

    def executable(self, install: AgentInstall) -> Path:
        """Its executable (default: ``binary`` in the npm install).

        Raises:
            FileNotFoundError: it is not installed (a tool installed apart from ``install``).
        """
        return install.binary(self.binary)

    def env(self, home: Home, model: FakeModelServer, install: AgentInstall
            ) -> dict[str, str]:
        """The whole environment it runs with (nothing else is inherited)."""
        node_dir = os.path.dirname(os.path.realpath(_which("node")))
        path = os.pathsep.join([str(install.bin_dir), node_dir, "/usr/local/bin", "/usr/bin",
                                "/bin"])
        return {**home.env(), "PATH": path, **self.extra_env(home, model)}

    def extra_env(self, home: Home, model: FakeModelServer) -> Mapping[str, str]:
        """Tool-specific variables (API key, base URL, telemetry off)."""
        return {}

    @abstractmethod
    def tui_argv(self, install: AgentInstall, model: FakeModelServer, args: Sequence[str]
                 ) -> list[str]:
        """The command line of its interactive TUI talking to ``model``."""

    @abstractmethod
    def program_argv(self, install: AgentInstall, model: FakeModelServer, prompt: str,
                     args: Sequence[str]) -> list[str]:
        """The command line of its program-driven one-shot run for ``prompt``."""

    @abstractmethod
    def ready(self, screen: str) -> bool:
        """Whether the TUI has started and takes input."""

    @abstractmethod
    def busy(self, screen: str) -> bool:
        """Whether the TUI shows that it is working on a turn."""

    quit_keys: ClassVar[tuple[tuple[str, ...], ...]] = (("C-c",), ("C-c",))
    """Key presses (tmux names) that quit the TUI, sent one group at a time."""

    @abstractmethod
    def shell(self, command: str) -> ToolUse:
        """A model answer that runs ``command`` with its shell tool."""

    def subagent(self, prompt: str, description: str = "harness sub-agent") -> ToolUse:
        """A model answer that starts a sub-agent with ``prompt``.

        Raises:
            NotImplementedError: the tool has no sub-agent tool.
        """
        raise NotImplementedError(f"{self.name} has no sub-agent tool")

    def mcp_tool(self, server: str, tool: str) -> str:
        """The name under which the model sees MCP ``server``'s tool ``tool``."""
        return f"{server}_{tool}"

    fixed_prompts: ClassVar[Mapping[str, str]] = {}
    """Commands (``/init``) that make the TUI send a fixed prompt of the tool's own, each
    with a marker: a piece of the prompt's text that only its rows hold (the source's
    ``actors/upstream/<source>/prompts.py`` table lists the whole text)."""

    def send_fixed_prompt(self, agent: Any, command: str, answer: Any) -> None:
        """Make the running TUI of ``agent`` (a :class:`~tests.harness.agent.Agent`) send
        the fixed prompt of ``command`` as a person does, recording a
        :data:`~tests.harness.actions.FIXED_PROMPT` action (text: its marker); the
        model answers it with ``answer`` (a :mod:`~tests.harness.script` answer,
        scripted here, after any the command needs first). Default: choose the command
        (:meth:`~tests.harness.agent.Agent.slash` with :attr:`command_enter`). Does not
        wait for the fixed prompt's request.

        Raises:
            KeyError: ``command`` is not in :attr:`fixed_prompts`.
            TimeoutError: the TUI did not show what the command needs in time.
        """
        from tests.harness import actions as act
        agent.script(answer)
        agent.slash(command, kind=act.FIXED_PROMPT, text=self.fixed_prompts[command],
                    enter=self.command_enter)

    command_enter: ClassVar[tuple[str, ...]] = ("Enter",)
    """The keys (tmux names) that run a slash command typed into the prompt box (a
    completion menu may take the first Enter)."""

    def continuations(self, original: Path) -> dict[str, tuple[str, list[str]]]:
        """The ways the TUI goes on with the conversation of the transcript ``original``
        in a new transcript: variant name -> ``(kind, args)`` (``kind`` an
        :mod:`~tests.harness.actions` constant, ``args`` the command line's); empty
        when the tool only appends to the session's own file (or cannot)."""
        return {}

    def session_continuations(self, session: str) -> dict[str, tuple[str, list[str]]]:
        """Like :meth:`continuations` for a store holding many sessions (OpenCode's
        database): the ways to go on with ``session`` (an id) in a new session of the
        store. Empty for a tool with a transcript per session."""
        return {}

    def delete_session(self, install: AgentInstall, home: Home, model: FakeModelServer,
                       session: str) -> None:
        """Delete ``session`` from the store as the tool's own command does (blocks until
        it exits).

        Raises:
            NotImplementedError: the tool keeps a transcript per session (delete the file).
            RuntimeError: the command failed.
        """
        raise NotImplementedError(f"{self.name} keeps a transcript per session")

    def move_elsewhere(self, home: Home, original: Path) -> Path:
        """Move the transcript ``original`` (and what the tool keeps beside it) to
        :meth:`elsewhere`, as a session that lived in another folder; returns the new path.

        Raises:
            OSError: the move failed.
        """
        target = self.elsewhere(home, original)
        target.parent.mkdir(parents=True, exist_ok=True)
        original.rename(target)
        return target

    continuation_copies: ClassVar[bool] = True
    """Whether :meth:`continuations`' new transcripts holds copies of the earlier rows."""

    def elsewhere(self, home: Home, original: Path) -> Path:
        """Where a person would have moved ``original`` out of the tool's way (another
        worktree's folder, an archive): a path that need not exist yet. Default:
        ``<home>/elsewhere/<name>``, outside the tool's store."""
        return home.root / "elsewhere" / original.name

    @abstractmethod
    def transcripts(self, home: Home, project: Path | None = None) -> list[Path]:
        """The transcripts it wrote under ``home`` (only ``project``'s when given)."""

    def decide(self, path: Path, project: Path | None = None) -> list[DecidedRow]:
        """Every unit of the transcript ``path`` decided through ``ssa classify``'s path
        (``project`` matters for a store holding many projects' sessions: OpenCode)."""
        return jsonl_rows(self.name, path, self.row_kind)

    def row_kind(self, row: Mapping[str, Any]) -> str:
        """A short name for a parsed row's kind (for reports)."""
        return str(row.get("type", "?"))


def _which(name: str) -> str:
    import shutil

    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not on PATH")
    return found
