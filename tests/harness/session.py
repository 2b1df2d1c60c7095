"""The :class:`Harness`: one test's fake models, homes, projects, tmux server and tools."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.harness import actions as act
from tests.harness.actions import ActionLog
from tests.harness.agent import Agent, ProgramRun
from tests.harness.home import Home
from tests.harness.install import AgentInstall
from tests.harness.models import FakeModelServer, server_for
from tests.harness.tmux import TmuxServer
from tests.harness.tools import AgentTool, tool_named

__all__ = ["Harness", "Setup"]

log = logging.getLogger(__name__)

Setup = Callable[[Home, Path], None]
"""A caller's hook run after the harness wrote a tool's config and before the tool
starts: ``setup(home, project)`` may add hooks, plugins, MCP servers."""


class Harness:
    """Everything one test starts, torn down by :meth:`close` (or a ``with`` block).

    Args:
        root: a directory of the test's own (``tmp_path``); homes, projects and
            launcher scripts go below it.
        install: the pinned CLIs (:func:`tests.harness.install.install`).

    Not thread-safe: one test thread drives it.
    """

    def __init__(self, root: Path, install: AgentInstall) -> None:
        self.root, self.install = root, install
        self.log = ActionLog()
        self._tmux: TmuxServer | None = None
        self._models: list[FakeModelServer] = []
        self._agents: list[Agent] = []
        self._processes: list[subprocess.Popen[str]] = []
        self._names: set[str] = set()

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def tmux(self) -> TmuxServer:
        """The test's private tmux server (started with the first TUI)."""
        if self._tmux is None:
            self._tmux = TmuxServer()
        return self._tmux

    def model(self, api: str) -> FakeModelServer:
        """Start a new fake model server for ``api`` (``anthropic``, ``responses``, ``chat``).

        Raises:
            KeyError: an unknown API.
        """
        server = server_for(api).start()
        self._models.append(server)
        return server

    def home(self, name: str = "home") -> Home:
        """A throw-away home ``<root>/<name>`` (created; the same one for the same name)."""
        return Home.create(self.root / name)

    def project(self, name: str = "project", *, git: bool = False) -> Path:
        """A project directory ``<root>/<name>`` (created), optionally a git repository
        with one commit.

        Raises:
            subprocess.CalledProcessError: ``git`` failed.
        """
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        if git and not (path / ".git").exists():
            env = {"HOME": str(self.root), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                   "GIT_AUTHOR_NAME": "harness", "GIT_AUTHOR_EMAIL": "harness@example.invalid",
                   "GIT_COMMITTER_NAME": "harness",
                   "GIT_COMMITTER_EMAIL": "harness@example.invalid"}
            (path / "README.md").write_text("harness project\n")
            for args in (["init", "-q", "-b", "main"], ["add", "README.md"],
                         ["commit", "-q", "-m", "init"]):
                subprocess.run(["git", *args], cwd=path, env=env, check=True, timeout=30,
                               capture_output=True)
        return path

    def _unique(self, name: str) -> str:
        base, n = name, 2
        while name in self._names:
            name, n = f"{base}-{n}", n + 1
        self._names.add(name)
        return name

    def start(self, tool: str | AgentTool, *, name: str | None = None, home: Home | None = None,
              project: Path | None = None, model: FakeModelServer | None = None,
              args: Sequence[str] = (), setup: Setup | None = None, wait_ready: bool = True
              ) -> Agent:
        """Configure ``tool`` and start its TUI in tmux; returns the driver.

        Defaults: the home ``home``, the project ``project``, a new fake server
        of the tool's API. ``setup(home, project)`` runs after the harness's
        config is written and before the tool starts. Two agents may share a
        home (and a project).

        Raises:
            KeyError: an unknown tool.
            TimeoutError: the TUI was not ready within its start-up timeout
                (with ``wait_ready``; the message holds the screen).
            TmuxError: tmux failed.
        """
        profile = tool_named(tool)
        home = home or self.home()
        project = project or self.project()
        model = model or self.model(profile.api)
        profile.configure(home, project, model)
        if setup is not None:
            setup(home, project)
        name = self._unique(name or profile.name)
        env = profile.env(home, model, self.install)
        argv = profile.tui_argv(self.install, model, args)
        pane = self.tmux.start(name, argv, cwd=project, env=env,
                               script_dir=self.root / "launchers")
        agent = Agent(name=name, tool=profile, home=home, project=project, model=model,
                      pane=pane, log=self.log)
        self._agents.append(agent)
        if wait_ready:
            agent.wait_ready()
        return agent

    def run_program(self, tool: str | AgentTool, prompt: str, *, home: Home | None = None,
                    project: Path | None = None, model: FakeModelServer | None = None,
                    args: Sequence[str] = (), setup: Setup | None = None,
                    timeout_s: float = 120.0, name: str | None = None) -> ProgramRun:
        """Run the tool's program-driven path on ``prompt`` to its end (not in tmux).

        Recorded as a ``program_run`` action (not a person's typing). Blocks
        until the program exits.

        Raises:
            TimeoutError: it ran longer than ``timeout_s`` (it is killed first).
        """
        profile = tool_named(tool)
        home = home or self.home()
        project = project or self.project()
        model = model or self.model(profile.api)
        profile.configure(home, project, model)
        if setup is not None:
            setup(home, project)
        argv = profile.program_argv(self.install, model, prompt, args)
        action = self.log.record(name or profile.name, profile.name, act.PROGRAM_RUN, prompt,
                                 argv=argv)
        proc = subprocess.Popen(argv, cwd=project, env=profile.env(home, model, self.install),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        self._processes.append(proc)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate(timeout=10)
            raise TimeoutError(f"{argv[0]} ran longer than {timeout_s:.0f} s; stdout:\n{out}\n"
                               f"stderr:\n{err}") from None
        finally:
            _kill_group(proc)
        return ProgramRun(argv, proc.returncode, out, err, action)

    @property
    def agents(self) -> list[Agent]:
        """The TUIs started so far."""
        return list(self._agents)

    def close(self) -> None:
        """Kill the tmux server (every TUI), leftover program runs, and the fake servers."""
        if self._tmux is not None:
            self._tmux.close()
        for proc in self._processes:
            _kill_group(proc)
        for server in self._models:
            server.stop()


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL ``proc``'s process group (its children too) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        log.warning("process %d did not exit after SIGKILL", proc.pid)
