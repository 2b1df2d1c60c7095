"""Aider (PyPI ``aider-chat``) against the fake Chat Completions server.

Aider is installed from PyPI into its own environment
(:mod:`tests.harness.pyinstall`), not from the npm lock; :meth:`Aider.env`
puts that environment's ``bin`` first on ``PATH``.

Command line (every flag checked in ``aider/args.py`` at v0.86.2):
``--openai-api-base <fake>/v1 --model openai/<MODEL_ID>`` (litellm's OpenAI
provider, with ``OPENAI_API_KEY`` a dummy), ``--edit-format diff`` (the
edit-block coder: the one that turns a fenced ``bash`` block of a reply into a
"Run shell command?" proposal), ``--no-auto-commits``, ``--no-check-update``,
``--no-show-model-warnings``, ``--analytics-disable``, ``--no-gitignore`` (no
``.gitignore`` question at start), ``--no-show-release-notes`` (no "see
what's new" question on a new version's first run), ``--no-detect-urls``
(no "Add URL to the chat?" question), ``--no-pretty`` (plain output, stable
screens) and ``--map-tokens 0``.

Aider offers the model no tools, so its fake server is the ``chat-plain``
one: every completion request is ``main`` but the commit-message and
summary ones. There is no tool call: a shell command is proposed as a
fenced ``bash`` block in the reply (:meth:`Aider.shell_text`), which Aider
asks about ("Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:").

Transcripts: ``<git root>/.aider.chat.history.md`` (and
``.aider.input.history``), one file per repository that every session
appends to.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from actors.upstream.aider.classify import classify_aider_history
from tests.harness.home import Home
from tests.harness.install import AgentInstall
from tests.harness.models import MODEL_ID, FakeModelServer
from tests.harness.pyinstall import PyInstall, aider_dir, installed_aider
from tests.harness.script import Text, ToolUse
from tests.harness.tools._base import AgentTool, DecidedRow

__all__ = ["Aider"]

FLAGS = ("--edit-format", "diff", "--no-auto-commits", "--no-check-update",
         "--no-show-model-warnings", "--analytics-disable", "--no-gitignore",
         "--no-show-release-notes", "--no-detect-urls", "--no-pretty", "--map-tokens", "0")
"""The flags of every run (see the module docstring)."""


class Aider(AgentTool):
    """Aider 0.86.2 (see the module docstring)."""

    name = "aider"
    api = "chat-plain"
    binary = "aider"
    version = "0.86.2"
    startup_timeout_s: ClassVar[float] = 60.0
    quit_keys: ClassVar[tuple[tuple[str, ...], ...]] = (("C-d",),)

    @staticmethod
    def pyinstall() -> PyInstall:
        """The pinned Aider environment.

        Raises:
            FileNotFoundError: it is not installed (``python -m tests.harness.pyinstall``).
        """
        found = installed_aider()
        if found is None:
            raise FileNotFoundError(f"Aider is not installed at {aider_dir()} "
                                    "(run: python -m tests.harness.pyinstall)")
        return found

    def executable(self, install: AgentInstall) -> Path:
        """``aider`` of the pinned Aider environment (not the npm install).

        Raises:
            FileNotFoundError: it is not installed.
        """
        return self.pyinstall().aider

    def configure(self, home: Home, project: Path, model: FakeModelServer) -> None:
        """Nothing to write: everything is on the command line."""

    def env(self, home: Home, model: FakeModelServer, install: AgentInstall
            ) -> dict[str, str]:
        """The home's variables, the Aider environment first on ``PATH``, a dummy key."""
        path = os.pathsep.join([str(self.pyinstall().bin_dir), "/usr/local/bin", "/usr/bin",
                                "/bin"])
        return {**home.env(), "PATH": path, **self.extra_env(home, model)}

    def extra_env(self, home: Home, model: FakeModelServer) -> Mapping[str, str]:
        """A dummy ``OPENAI_API_KEY`` and git identity (no "Update git name" notes)."""
        return {"OPENAI_API_KEY": "sk-harness-dummy", "GIT_AUTHOR_NAME": "harness",
                "GIT_AUTHOR_EMAIL": "harness@example.invalid", "GIT_COMMITTER_NAME": "harness",
                "GIT_COMMITTER_EMAIL": "harness@example.invalid"}

    def _base(self, model: FakeModelServer) -> list[str]:
        return [str(self.pyinstall().aider), "--openai-api-base", f"{model.base_url}/v1",
                "--model", f"openai/{MODEL_ID}", *FLAGS]

    def tui_argv(self, install: AgentInstall, model: FakeModelServer, args: Sequence[str]
                 ) -> list[str]:
        """``aider <flags> [args]``."""
        return [*self._base(model), *args]

    def program_argv(self, install: AgentInstall, model: FakeModelServer, prompt: str,
                     args: Sequence[str]) -> list[str]:
        """``aider <flags> [args] --message PROMPT`` (one message, then exit)."""
        return [*self._base(model), *args, "--message", prompt]

    def ready(self, screen: str) -> bool:
        """The input prompt (``diff> ``) is on the last non-empty line."""
        lines = [line for line in screen.splitlines() if line.strip()]
        return bool(lines) and lines[-1].lstrip().startswith("diff>")

    def busy(self, screen: str) -> bool:
        """Aider shows no busy line with ``--no-pretty``: busy means not at its prompt."""
        return not self.ready(screen)

    def shell(self, command: str) -> ToolUse:
        """Aider has no tool calls: see :meth:`shell_text`.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError("Aider offers the model no tools; script "
                                  "Aider.shell_text(command) as a Text answer")

    @staticmethod
    def shell_text(command: str, text: str = "Run this:") -> Text:
        """A reply proposing ``command`` in a fenced ``bash`` block (Aider asks to run it)."""
        return Text(f"{text}\n\n```bash\n{command}\n```\n")

    fixed_prompts: ClassVar[Mapping[str, str]] = {
        "/lint": "# Fix any errors below, if possible."}
    """``/lint`` answered "Fix lint errors in …? y": Aider sends the linter's report
    (``linter.py`` ``errors_to_lint_result``) as user input."""

    def send_fixed_prompt(self, agent: Any, command: str, answer: Any) -> None:
        """``/lint``: write a Python file with a syntax error, ``/add`` it, ``/lint``,
        and answer ``y`` to "Fix lint errors in …?" (each recorded: the two commands
        ``slash``, the answer ``confirm``, the report ``fixed_prompt``)."""
        from tests.harness import actions as act
        if command != "/lint":
            raise KeyError(command)
        agent.script(answer)
        (agent.project / "broken_lint.py").write_text("def broken(:\n    return 1\n")
        agent.slash("/add broken_lint.py")
        agent.wait_idle()
        agent.slash("/lint", text=None)
        agent.pane.wait_text("Fix lint errors in", 30)
        agent.pane.wait_quiet(0.3, 5)
        agent.pane.send_text("y")
        agent.keys("Enter")
        agent.record(act.CONFIRM, None, answer="y")
        agent.record(act.FIXED_PROMPT, self.fixed_prompts[command], command=command)

    def transcripts(self, home: Home, project: Path | None = None) -> list[Path]:
        """``<project>/.aider.chat.history.md`` when it exists (Aider writes into the
        repository, not the home)."""
        if project is None:
            return []
        path = project / ".aider.chat.history.md"
        return [path] if path.is_file() else []

    def decide(self, path: Path, project: Path | None = None) -> list[DecidedRow]:
        """Every block of the chat history decided by :func:`classify_aider_history`."""
        return [DecidedRow(self.name, path, block.offset, block.session, unit.human,
                           unit.reason, block.kind, (block.text,))
                for block, unit in classify_aider_history(path.read_bytes())]
