"""An Aider (0.86) chat history, written into ``.aider.chat.history.md`` as Aider writes it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from actors.upstream.aider.paths import history_thread_id
from actors.upstream.kit import turns as t
from actors.upstream.kit.clock import ManualClock

__all__ = ["GUI_COMMAND_LINE", "LINT_PROMPT", "WINDOWS_COMMAND_LINE", "AiderChatHistory", "sample",
           "type_turn"]

VERSION = "0.86.2"
"""The Aider version whose writes the builder follows (``aider/io.py``)."""

WINDOWS_COMMAND_LINE = (r"C:\Users\user\AppData\Roaming\Python\Python311\Scripts\aider"
                        " --model openai/harness-model")
"""What Aider logs on Windows: ``sys.argv[0]`` is the launcher's path without ``.exe``."""

GUI_COMMAND_LINE = ("/home/user/.venv/lib/python3.11/site-packages/aider/gui.py --gui"
                    " --model openai/harness-model")
"""What the browser GUI's process logs (``aider --gui`` runs ``streamlit run aider/gui.py``)."""

LINT_PROMPT = "# Fix any errors below, if possible.\n\n"
"""How Aider's lint report starts (``linter.py`` ``errors_to_lint_result``)."""

_COMMAND_LINE = "/usr/local/bin/aider --model openai/harness-model"
_CHAT_COMMANDS = ("ask", "code", "architect", "context")
_RUN_QUESTION = "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:"
_GROUP_QUESTION = "Run shell command? (Y)es/(N)o/(S)kip all/(D)on't ask again [Yes]:"


class AiderChatHistory:
    """Appends sessions to ``<repo>/.aider.chat.history.md`` exactly as Aider 0.86 does.

    Every write is one append of the text ``InputOutput.append_chat_history``
    would write: a session header ``# aider chat started at <local time>``,
    tool lines ``> …  `` (two trailing spaces), user input blocks
    ``\\n#### …  \\n`` and replies ``\\n<text>\\n\\n``.

    Args:
        path: the chat history file (created 0600 when missing; its parent must exist).
        clock: epoch-ms clock for the session headers (default: a private clock).
        command_line: the ``sys.argv`` Aider logs at start (``--message`` makes a
            program-driven session, which never counts; :data:`GUI_COMMAND_LINE`
            the browser GUI's; default :data:`WINDOWS_COMMAND_LINE` when ``windows``).
        windows: write as Aider does on Windows: the file is opened in text mode,
            so every ``\n`` lands as ``\r\n``.

    Turns map to what Aider writes: :class:`~actors.testing.Typed` a user block
    (counts); :class:`~actors.testing.Reply` a reply; :class:`~actors.testing.ToolCall`
    with ``input["command"]`` a reply proposing the command in a ``bash`` block,
    the "Run shell command?" question answered ``y`` and ``Running …``;
    :class:`~actors.testing.ToolResult` the output as tool lines;
    :class:`~actors.testing.SlashCommand` ``#### /<name> <args>`` (for ``ask``,
    ``code``, ``architect``, ``context`` with args the sub-coder's echo of the
    args follows; the command's text counts, the echo does not);
    :class:`~actors.testing.Interrupt` ``> ^C again to exit``;
    :class:`~actors.testing.ImageOnly` ``#### /paste`` (a command);
    :class:`~actors.testing.Compaction` and :class:`~actors.testing.SubagentRow`
    nothing (Aider summarizes in memory and has no sub-agents). Not thread-safe;
    blocks on the file write.
    """

    def __init__(self, path: str | os.PathLike[str], *, clock: Callable[[], int] | None = None,
                 command_line: str | None = None, windows: bool = False) -> None:
        self.path = Path(path)
        self._clock = clock or ManualClock()
        self._command_line = command_line or (WINDOWS_COMMAND_LINE if windows else _COMMAND_LINE)
        self._newline = "\r\n" if windows else "\n"
        self._started = False

    def start_session(self, command_line: str | None = None) -> int:
        """Write a session header and the logged command line; returns the header's
        byte offset (the session id is ``aider@<offset>``).

        Raises:
            OSError: the file cannot be written.
        """
        offset = self.path.stat().st_size + 1 if self.path.exists() else 1
        for text in self._header(command_line):
            self._write(text)
        self._started = True
        return offset

    def _header(self, command_line: str | None = None) -> list[str]:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self._clock() / 1000))
        return [f"\n# aider chat started at {stamp}\n\n",
                _tool(command_line or self._command_line), _tool(f"Aider v{VERSION}")]

    def append(self, *turns: t.Turn) -> int:
        """Write the text of ``turns`` (a session is started first when none is);
        returns how many writes it took.

        Raises:
            TypeError: a turn of an unknown kind (nothing more is written).
            OSError: the file cannot be written.
        """
        if not self._started:
            self.start_session()
        count = 0
        for turn in turns:
            for text in self._texts(turn):
                self._write(text)
                count += 1
        return count

    def confirm_group_echo(self, preference: str = "skip") -> None:
        """Write what Aider writes for the second command of a group whose first
        question was answered "skip all" (``s``): the answer as a tool line, then
        the next question with the preference as *user input*.

        Raises:
            OSError: the file cannot be written.
        """
        self._write(_tool(f"{_GROUP_QUESTION} s"))
        self._write(_user(f"{_GROUP_QUESTION}{preference}"))

    def lines(self, *turns: t.Turn) -> bytes:
        """The bytes :meth:`append` would write for ``turns``, without writing (with the
        session header first while no session was started, as :meth:`append` does).

        Raises:
            TypeError: a turn of an unknown kind.
        """
        head = [] if self._started else self._header()
        text = "".join([*head, *(text for turn in turns for text in self._texts(turn))])
        return text.replace("\n", self._newline).encode()

    def lint_fix(self, fname: str, errors: str) -> None:
        """The person runs ``/lint`` and answers "Fix lint errors in …?" with ``y``: Aider
        writes the report as tool lines, the answer, then the report as *user input*
        (``commands.py`` ``cmd_lint`` → ``lint_coder.run(errors)``), and a reply.

        Raises:
            OSError: the file cannot be written.
        """
        report = f"{LINT_PROMPT}## Running: flake8 {fname}\n\n{errors}"
        self.append(t.Typed("/lint"))
        for text in [*(_tool(line) for line in report.splitlines() if line.strip()),
                     _tool(f"Fix lint errors in {fname}? (Y)es/(N)o [Yes]: y"),
                     _user(report), f"\nFixed {fname}.\n\n"]:
            self._write(text)

    def architect_edit(self, plan: str) -> None:
        """Architect mode: the architect's reply ``plan``, then (edits auto-accepted, the
        default) Aider sends the same text to its editor, which writes it as *user
        input* (``architect_coder.py`` ``reply_completed`` →
        ``editor_coder.run(with_message=content)``), and the editor's reply.

        Raises:
            OSError: the file cannot be written.
        """
        for text in [*self._texts(t.Reply(plan)), _user(plan), "\nApplied edit to app.py\n\n"]:
            self._write(text)

    def _write(self, text: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", newline=self._newline) as handle:
            handle.write(text)

    def _texts(self, turn: t.Turn) -> list[str]:
        match turn:
            case t.Typed(text=text):
                return [_user(text)]
            case t.Reply(text=text):
                return [f"\n{text.strip()}\n\n"]
            case t.ToolCall(input=arguments):
                command = str(arguments.get("command", ""))
                return [f"\nRun this:\n\n```bash\n{command}\n```\n\n",
                        _tool(command), _tool(f"{_RUN_QUESTION} y"), _tool(f"Running {command}")]
            case t.ToolResult(output=output):
                return [_tool(line) for line in output.splitlines() if line.strip()]
            case t.SlashCommand(name=name, args=args):
                texts = [_user(f"/{name} {args}".rstrip())]
                if name in _CHAT_COMMANDS and args.strip():
                    texts.append(_user(args))
                return texts
            case t.Interrupt():
                return [_tool("^C again to exit")]
            case t.ImageOnly():
                return [_user("/paste")]
            case t.Compaction() | t.SubagentRow():
                return []
        raise TypeError(f"not a turn: {turn!r}")


def _tool(text: str) -> str:
    return f"> {text.strip()}  \n"


def _user(text: str) -> str:
    lines = text.splitlines() or ["<blank>"]
    return ("\n#### " + "  \n#### ".join(lines)).rstrip() + "  \n"


def sample(root: Path) -> tuple[str, str]:
    """Write a sample chat history under ``root``: ``demo/.aider.chat.history.md`` with
    one session and a typed prompt. Returns ``(path, thread id)`` as discovery gives them.

    Raises:
        OSError: it cannot be written.
    """
    repo = root / "demo"
    repo.mkdir(parents=True, exist_ok=True)
    path = repo / ".aider.chat.history.md"
    AiderChatHistory(path).append(t.Typed("Summarise the diff"), t.Reply("Done."))
    return str(path), history_thread_id(str(path))


def type_turn(path: str, thread_id: str, text: str) -> None:
    """Append a prompt a person typed to the running session of the history at ``path``,
    and the reply Aider writes before it takes the next one (raises ``OSError``).

    Aider answers every prompt (a reply, or ``> `` lines) before it reads the
    next, and a ``#### …  `` block right after a prompt is read as the heading a
    reply starts with (``reply_line``), so turns typed in a burst each come with
    their answer: two writes, the prompt first.
    """
    history = AiderChatHistory(path)
    history._started = True  # the session the file ends with goes on
    history.append(t.Typed(text), t.Reply("Done."))
