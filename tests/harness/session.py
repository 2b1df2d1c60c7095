"""The :class:`Harness`: one test's fake models, homes, projects, tmux server and tools."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.harness import actions as act
from tests.harness.actions import ActionLog
from tests.harness.agent import Agent, ProgramRun
from tests.harness.home import Home
from tests.harness.install import AgentInstall
from tests.harness.models import FakeModelServer, server_for
from tests.harness.tmux import TmuxServer
from tests.harness.tools import AgentTool, tool_named
from tests.harness.watch import SsaWatch

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
        self._watches: list[SsaWatch] = []

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

    def reopen(self, agent: Agent, kind: str, args: Sequence[str], *, name: str | None = None,
               quit_first: bool = True, wait_ready: bool = True) -> Agent:
        """Start ``agent``'s tool again in its home and project with ``args`` (``--resume
        ID``, ``--continue``, ``resume --last``, ``--fork``...), on the same fake server.

        ``kind`` is the action recorded (``resume``, ``continue``, ``fork``; not
        ``human``), with the command line in its detail. With ``quit_first`` the
        old TUI is quit first (a person leaves it before resuming its session).
        The new driver gets a name of its own (``claude-2``...): compare by tool.

        Raises:
            TimeoutError: the new TUI was not ready in time.
        """
        if quit_first:
            agent.quit()
        action_args = list(args)
        new = self.start(agent.tool, name=name or agent.name.split("-")[0], home=agent.home,
                         project=agent.project, model=agent.model, args=action_args,
                         wait_ready=False)
        self.log.record(new.name, agent.tool.name, kind, None, args=action_args, of=agent.name)
        if wait_ready:
            new.wait_ready()
        return new

    def watch(self, home: Home | None = None, *, interval_s: float = 1.0,
              args: Sequence[str] = ()) -> SsaWatch:
        """Start ``ssa watch --json [args]`` in ``home`` (default: ``home()``); stopped by
        :meth:`close`. Start it before the tools' first sessions (they are then read
        from their start); blocks until its start-up summary is printed.

        Raises:
            TimeoutError: no summary within 30 s.
        """
        watch = SsaWatch(home or self.home(), interval_s=interval_s, args=args)
        self._watches.append(watch)
        watch.wait_summary()
        return watch

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

    def run_rpc(self, prompts: Sequence[str], *, home: Home | None = None,
                project: Path | None = None, model: FakeModelServer | None = None,
                args: Sequence[str] = (), setup: Setup | None = None,
                timeout_s: float = 120.0, name: str = "pi-rpc") -> ProgramRun:
        """Drive Pi's RPC mode (``pi --mode rpc``): send each of ``prompts`` as a
        ``{"type": "prompt"}`` command on stdin and wait for its ``agent_end`` event,
        then close stdin and wait for the exit.

        Each prompt is one ``program_run`` action (``mode: "rpc"``; a program sent
        it, no person typed it). The returned run's ``action`` is the last one;
        ``stdout`` holds every event line. Blocks until the program exits.

        Raises:
            TimeoutError: the events or the exit took longer than ``timeout_s`` in all
                (the process is killed first; the message holds what it printed).
            RuntimeError: a command was refused (``"success": false``).
        """
        profile = tool_named("pi")
        home = home or self.home()
        project = project or self.project()
        model = model or self.model(profile.api)
        profile.configure(home, project, model)
        if setup is not None:
            setup(home, project)
        argv = [str(self.install.binary(profile.binary)), "--mode", "rpc", *args]
        proc = subprocess.Popen(argv, cwd=project, env=profile.env(home, model, self.install),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        self._processes.append(proc)
        lines: queue.Queue[str | None] = queue.Queue()
        out: list[str] = []
        errors: list[str] = []

        def read(stream: Any, sink: queue.Queue[str | None] | list[str]) -> None:
            for line in stream:
                if isinstance(sink, list):
                    sink.append(line)
                else:
                    sink.put(line)
            if not isinstance(sink, list):
                sink.put(None)

        readers = [threading.Thread(target=read, args=(proc.stdout, lines), daemon=True),
                   threading.Thread(target=read, args=(proc.stderr, errors), daemon=True)]
        for reader in readers:
            reader.start()
        deadline = time.monotonic() + timeout_s
        action = None
        try:
            assert proc.stdin is not None
            for n, prompt in enumerate(prompts, 1):
                action = self.log.record(name, profile.name, act.PROGRAM_RUN, prompt, argv=argv,
                                         mode="rpc")
                proc.stdin.write(json.dumps({"id": f"harness-{n}", "type": "prompt",
                                             "message": prompt}) + "\n")
                proc.stdin.flush()
                while True:
                    try:
                        line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                    except queue.Empty:
                        raise TimeoutError(f"pi --mode rpc: no agent_end within {timeout_s:.0f}"
                                           f" s; stdout:\n{''.join(out[-20:])}\nstderr:\n"
                                           f"{''.join(errors[-20:])}") from None
                    if line is None:
                        raise TimeoutError(f"pi --mode rpc exited before agent_end; stdout:\n"
                                           f"{''.join(out[-20:])}\nstderr:\n"
                                           f"{''.join(errors[-20:])}")
                    out.append(line)
                    event = json.loads(line)
                    if event.get("type") == "response" and event.get("success") is False:
                        raise RuntimeError(f"pi --mode rpc refused {prompt!r}: {line.strip()}")
                    if event.get("type") == "agent_end":
                        break
            proc.stdin.close()
            proc.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"pi --mode rpc did not exit after its stdin closed; stderr:\n"
                               f"{''.join(errors[-20:])}") from None
        finally:
            _kill_group(proc)
            for reader in readers:
                reader.join(timeout=10)
            _close_pipes(proc)  # its readers are done: no pipe is left to the GC
        assert action is not None, "no prompts"
        return ProgramRun(argv, proc.returncode, "".join(out), "".join(errors), action)

    @property
    def agents(self) -> list[Agent]:
        """The TUIs started so far."""
        return list(self._agents)

    def close(self) -> None:
        """Kill the tmux server (every TUI), leftover program runs, ``ssa watch`` runs and
        the fake servers."""
        for watch in self._watches:
            watch.close()
        if self._tmux is not None:
            self._tmux.close()
        for proc in self._processes:
            _kill_group(proc)
            _close_pipes(proc)
        for server in self._models:
            server.stop()


def _close_pipes(proc: subprocess.Popen[str]) -> None:
    """Close ``proc``'s pipes (a reaped process's unclosed pipes warn at GC, failing a test)."""
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.close()


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL ``proc``'s process group (its children too) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        log.warning("process %d did not exit after SIGKILL", proc.pid)
