"""Read Aider's chat history (``.aider.chat.history.md``) and decide which turns a person typed.

Aider (PyPI ``aider-chat``; rules checked against v0.86.2) appends every
session of a repository to one Markdown file, by default
``<git root>/.aider.chat.history.md`` (``aider/args.py``,
``--chat-history-file``). Every write is one ``InputOutput.append_chat_history``
call (``aider/io.py``): the file is opened in append mode, the text written,
the file closed. Aider's own reader (``aider/utils.py``
``split_chat_history_markdown``) tells four line kinds apart, and so does
this module:

* ``# aider chat started at YYYY-MM-DD HH:MM:SS``: a session starts
  (``InputOutput.__init__``; local time, no zone);
* ``> …``: tool output (``tool_output``/``tool_warning``/``tool_error``), the
  logged command line (``main.py``: ``io.tool_output(" ".join(sys.argv))``),
  and every answer to a confirmation question (``confirm_ask``:
  ``> <question> (Y)es/(N)o… [Yes]: y``);
* ``#### …``: user input (``InputOutput.user_input``): a block
  ``\\n#### line 1  \\n#### line 2  \\n``, every line
  ending in two spaces, ``#### <blank>`` for an empty input;
* anything else: the assistant's reply (``ai_output``).

A unit is one *block*: a run of lines of one kind. User blocks are decided;
the others are never typed (``session_start``, ``tool_output``, ``assistant``).

Which user blocks are typed (reason ``typed``), and why the others are not:

* ``program_session``: the session's logged command line holds ``--message``/
  ``--msg``/``-m`` or ``--message-file``/``-f`` (``main.py``: the message is
  written with ``user_input`` exactly as a typed prompt, then Aider exits);
* ``no_command_line``: no command line was logged in the session before the
  block (Aider 0.86.2 always logs it first; a file of another shape proves
  nothing), ``no_session``: a block before any session header;
* ``confirm_answer``: the text is a confirmation question with its answer:
  when a question belongs to a group already answered with "all" or "skip all"
  (``confirm_ask`` with ``group.preference``), Aider writes the question and
  the preference as user input (``#### Run shell command? (Y)es/(N)o/(S)kip
  all/(D)on't ask again [Yes]: skip``). Answers a person types are written as
  ``> `` tool lines, never as ``####``;
* ``command_echo``: ``/ask``, ``/code``, ``/architect``, ``/context`` with a
  text run a sub-coder that writes that text again as user input
  (``commands.py`` ``_generic_chat_command`` → ``Coder.run(with_message)``);
  the block right after such a command (typed, or a ``> Executing: /ask …``
  line of ``/load``) with the same text is that echo. After ``/help <q>``
  the next block is Aider's own help prompt;
* ``watch_files``: the ``/ask`` prompt ``--watch-files`` builds from ``AI?``
  comments (``watch.py``, ``watch_prompts.py``);
* ``shell``: ``/run …`` or ``!…`` (a shell command, nothing sent to the model
  unless its output is added); ``slash_command``: any other ``/`` input (Aider
  runs every input starting with ``/`` as a command, ``commands.py``
  ``is_command``; an unknown one is an error, nothing is sent);
* ``empty_text``: ``#### <blank>``;
* ``inter_session``, ``reseed_envelope``, ``openclaw_envelope``: a gateway envelope.

``/ask <text>`` (and ``/code``, ``/architect``, ``/context``) with a text is
typed: a person wrote the text; the unit's text is the command's argument.

``.aider.input.history`` is not used to decide anything: it is
prompt_toolkit's ``FileHistory`` of the same prompt session, so it also
holds every typed confirmation answer (``+y``), and Aider itself appends
``/run <command>`` for every shell command the *model* proposed and the
person accepted (``base_coder.py`` ``handle_shell_commands``), and the
``--message`` text (``main.py``); nothing in it tells these from prompts.

Incremental reading (:func:`read_aider_history`): the caller keeps an
:class:`AiderCursor` (a byte offset plus the state of the session being
read) and passes the bytes of the file from that offset. Only complete
lines are consumed (a torn last line waits). A user block that ends exactly
at the end of the data is complete when it is shorter than
:data:`ATOMIC_WRITE_BYTES` (one ``write(2)``: Python's buffered file writes a
smaller text in one call when the file is closed); a longer one waits for
the next line (or ``final=True``).

Pure: no I/O, no logging, thread-safe, non-blocking. Message text only
travels in the returned :class:`~actors.upstream.Unit` values.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Final

import msgspec

from actors.upstream.common import Unit, gateway_envelope_reason, normalize_text

__all__ = [
    "ATOMIC_WRITE_BYTES",
    "CHAT_COMMANDS",
    "COMMANDS",
    "AiderBlock",
    "AiderCursor",
    "AiderRead",
    "AiderSession",
    "aider_fingerprint",
    "aider_sessions",
    "classify_aider_history",
    "past_long_line",
    "read_aider_history",
]

ATOMIC_WRITE_BYTES: Final = 8192
"""``io.DEFAULT_BUFFER_SIZE``: a user block shorter than this lands in one write."""

COMMANDS: Final = frozenset({
    "model", "editor-model", "weak-model", "chat-mode", "models", "web", "commit", "lint",
    "clear", "reset", "tokens", "undo", "diff", "add", "drop", "git", "test", "run", "exit",
    "quit", "ls", "help", "ask", "code", "architect", "context", "voice", "paste",
    "read-only", "map", "map-refresh", "settings", "load", "save", "multiline-mode", "copy",
    "report", "editor", "edit", "think-tokens", "reasoning-effort", "copy-context",
})
"""Aider 0.86.2's commands (``commands.py``: every ``cmd_*`` method, ``_`` as ``-``)."""

CHAT_COMMANDS: Final = frozenset({"ask", "code", "architect", "context"})
"""Commands whose text is a prompt the person typed (and that Aider writes again)."""

_HEADER: Final = "# aider chat started at "
_USER: Final = "#### "
_TOOL: Final = "> "
_BLANK: Final = "<blank>"
_EXECUTING: Final = "Executing: "
_PROGRAM_FLAGS: Final = ("--message", "--msg", "--message-file")
_PROGRAM_SHORT: Final = ("-m", "-f")
_CONFIRM: Final = re.compile(
    r".+? \(Y\)es/\(N\)o(?:/\(A\)ll)?(?:/\(S\)kip all)?(?:/\(D\)on't ask again)?"
    r" \[[^\]\n]*\]: ?\S*", re.DOTALL)
_WATCH_ASK: Final = 'Find the "AI" comments below (marked with \u2588) in the code files'
_HEADER_TIME: Final = "%Y-%m-%d %H:%M:%S"


class AiderSession(msgspec.Struct, frozen=True, kw_only=True):
    """One session of a chat history (from its header to the next).

    Attributes:
        id: ``"aider@<byte offset of its header line>"``: unique within one file.
        offset: byte offset of the header line.
        started: the header's time text (local time of the machine, no zone).
        started_ms: ``started`` as epoch ms in this process's local zone, or ``None``.
        command_line: the logged ``aider …`` command line, once seen.
        program: the command line asks for one message and an exit (``--message``…).
    """

    id: str
    offset: int
    started: str
    started_ms: int | None = None
    command_line: str | None = None
    program: bool = False

    @property
    def refusal(self) -> str | None:
        """Why no turn of this session counts: ``program_session``, ``no_command_line``."""
        if self.program:
            return "program_session"
        return "no_command_line" if self.command_line is None else None


class AiderBlock(msgspec.Struct, frozen=True, kw_only=True):
    """A run of lines of one kind.

    Attributes:
        offset: byte offset of its first line (relative to the whole file).
        end: byte offset just past its last line.
        kind: ``session_start``, ``tool``, ``user`` or ``assistant``.
        text: the lines without their ``####``/``> `` prefixes and the two
            trailing spaces of user lines, joined with ``\\n``.
        session: the id of the session it belongs to, or ``None`` before any header.
    """

    offset: int
    end: int
    kind: str
    text: str
    session: str | None


class AiderCursor(msgspec.Struct, frozen=True, kw_only=True):
    """Where reading stands: the next byte offset and the state it needs.

    Attributes:
        offset: the byte offset of the next unread line.
        session: the session being read (``None`` before the first header).
        echo: the text a chat command's sub-coder is expected to write again
            next (``command_echo``), ``""`` for any text (after ``/help``), or ``None``.
        in_line: ``offset`` is inside a line that is not a person's (a reply or
            tool line longer than the scan cap, see :func:`past_long_line`): the
            bytes up to its newline are skipped.
    """

    offset: int = 0
    session: AiderSession | None = None
    echo: str | None = None
    in_line: bool = False


class AiderRead(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`read_aider_history` found.

    Attributes:
        decisions: ``(block, unit)`` for every complete block, in file order.
        cursor: where the next read starts.
        sessions: every session whose header was read, in file order.
    """

    decisions: tuple[tuple[AiderBlock, Unit], ...]
    cursor: AiderCursor
    sessions: tuple[AiderSession, ...]

    @property
    def human(self) -> list[tuple[AiderBlock, Unit]]:
        """The blocks decided typed, oldest first."""
        return [(block, unit) for block, unit in self.decisions if unit.human]


def aider_fingerprint(head: bytes) -> str | None:
    """A fingerprint of the file for change detection: SHA-256 hex of its first session
    header line (Aider writes it at the very start and never rewrites it).

    Args:
        head: the first bytes of the file (256 are plenty).

    Returns:
        The hex digest, or ``None`` while no complete first header line is there
        (or the file does not start with one).
    """
    text = head.lstrip(b"\n")
    end = text.find(b"\n")
    if end < 0 or not text.startswith(_HEADER.encode()):
        return None
    return hashlib.sha256(text[:end]).hexdigest()


def read_aider_history(data: bytes, cursor: AiderCursor | None = None, *,
                       final: bool = False) -> AiderRead:
    """Decide every complete block of ``data``, the file's bytes from ``cursor.offset``.

    Args:
        data: the file's content from ``cursor.offset`` on (the whole file for a
            new cursor). Bytes that are not UTF-8 are replaced (Aider writes
            with ``errors="ignore"``).
        cursor: the previous read's cursor, or ``None`` to read from the start.
        final: the file is complete (no writer): a trailing block is decided
            even when it could still grow, and a last line without its newline
            is read.

    Returns:
        The decisions, the next cursor and the sessions started in ``data``.

    Pure: no I/O, no logging, thread-safe, non-blocking.
    """
    cursor = cursor or AiderCursor()
    if cursor.in_line:  # the rest of a long reply or tool line: never typed
        nl = data.find(b"\n")
        if nl < 0:
            return AiderRead(decisions=(), cursor=msgspec.structs.replace(
                cursor, offset=cursor.offset + len(data)), sessions=())
        cursor = msgspec.structs.replace(cursor, offset=cursor.offset + nl + 1, in_line=False)
        data = data[nl + 1:]
    base = cursor.offset
    lines = list(_lines(data, final))
    blocks: list[AiderBlock] = []
    consumed = 0
    i = 0
    session_id = cursor.session.id if cursor.session is not None else None
    while i < len(lines):
        start, end, line = lines[i]
        kind = _kind(line)
        if kind == "blank":
            consumed = end
            i += 1
            continue
        if kind == "session_start":
            session_id = f"aider@{base + start}"
            blocks.append(AiderBlock(offset=base + start, end=base + end, kind=kind,
                                     text=line[len(_HEADER):].strip(), session=session_id))
            consumed = end
            i += 1
            continue
        j = i
        texts: list[str] = []
        while j < len(lines) and _kind(lines[j][2]) == kind:
            texts.append(_strip(kind, lines[j][2]))
            j += 1
        block_end = lines[j - 1][1]
        if j == len(lines) and kind == "user" and not final \
                and (block_end == len(data) and block_end - start >= ATOMIC_WRITE_BYTES):
            break  # a long user block at the end may still be written: wait
        if j == len(lines) and kind != "user" and not final and block_end == len(data):
            # A tool or assistant block at the end may grow; it is never typed, but
            # reading it again later would split it: stop before it.
            break
        blocks.append(AiderBlock(offset=base + start, end=base + block_end, kind=kind,
                                 text="\n".join(texts), session=session_id))
        consumed = block_end
        i = j
    decisions, session, echo, sessions = _decide(blocks, cursor)
    return AiderRead(decisions=tuple(decisions),
                     cursor=AiderCursor(offset=base + consumed, session=session, echo=echo),
                     sessions=tuple(sessions))


def past_long_line(data: bytes, cursor: AiderCursor) -> AiderCursor | None:
    """Where to go on when ``data`` (a full scan window from ``cursor.offset``) holds no
    complete block: the cursor past the reply or tool lines it holds, or ``None``.

    A block longer than the window would stall every scan (nothing complete to
    decide). When its first line is not a person's (a reply or tool line: never
    typed), the complete lines are skipped, and a line with no newline in the
    window is skipped to its end (``in_line``). A person's block, a header or a
    line of unknown kind gives ``None``: it is waited for (precision first).
    Pure; thread-safe; never raises.
    """
    if cursor.in_line or not data:
        return None
    nl = data.find(b"\n")
    first = data[:nl if nl >= 0 else len(data)].decode("utf-8", "replace").rstrip("\r")
    if _kind(first) not in ("assistant", "tool") or first.startswith(_USER[:1]):
        return None
    last = data.rfind(b"\n")
    if last < 0:
        return msgspec.structs.replace(cursor, offset=cursor.offset + len(data), in_line=True)
    return msgspec.structs.replace(cursor, offset=cursor.offset + last + 1)


def classify_aider_history(data: bytes) -> list[tuple[AiderBlock, Unit]]:
    """Every block of a whole chat history decided, as ``ssa classify`` shows it.

    Args:
        data: the whole file.

    Returns:
        ``(block, unit)`` in file order (``final`` reading: nothing waits). Pure.
    """
    return list(read_aider_history(data, final=True).decisions)


def aider_sessions(data: bytes) -> list[AiderSession]:
    """Every session of a whole chat history, in file order (a resumed session,
    ``--restore-chat-history``, is a new session: Aider appends a new header). Pure."""
    return list(read_aider_history(data, final=True).sessions)


# --- helpers -------------------------------------------------------------------


def _lines(data: bytes, final: bool) -> Iterator[tuple[int, int, str]]:
    """``(start, end, text)`` of each complete line (``end`` past its newline)."""
    start = 0
    while start < len(data):
        nl = data.find(b"\n", start)
        if nl < 0:
            if final:
                yield start, len(data), data[start:].decode("utf-8", "replace").rstrip("\r")
            return
        yield start, nl + 1, data[start:nl].decode("utf-8", "replace").rstrip("\r")
        start = nl + 1


def _kind(line: str) -> str:
    if not line.strip():
        return "blank"
    if line.startswith(_HEADER):
        return "session_start"
    if line.startswith(_USER) and line.endswith("  "):
        return "user"  # user_input lines always end with two spaces (linebreak)
    if line.startswith(_TOOL) or line == ">":
        return "tool"
    return "assistant"


def _strip(kind: str, line: str) -> str:
    if kind == "user":
        return line[len(_USER):-2]
    if kind == "tool":
        return line[2:].rstrip()
    return line


def _started_ms(text: str) -> int | None:
    try:
        parsed = datetime.strptime(text, _HEADER_TIME)
    except ValueError:
        return None
    return int(time.mktime(parsed.timetuple())) * 1000


def _is_command_line(line: str) -> bool:
    """Whether a tool line is the logged ``sys.argv``: its first word is the ``aider``
    executable (any directory) or Aider's ``__main__.py`` (``python -m aider``)."""
    first = line.split(" ", 1)[0]
    name = first.rsplit("/", 1)[-1]
    return name == "aider" or name.startswith("aider.") or (
        name == "__main__.py" and "aider" in first)


def _is_program(command_line: str) -> bool:
    """``--message``/``--msg``/``-m``/``--message-file``/``-f`` among the words (POLICY:
    a word of another option's value that looks like one only loses recall)."""
    for word in command_line.split():
        if word in _PROGRAM_FLAGS or word in _PROGRAM_SHORT:
            return True
        if word.startswith(tuple(f"{flag}=" for flag in _PROGRAM_FLAGS)):
            return True
        if len(word) > 2 and word[:2] in _PROGRAM_SHORT and not word.startswith("--"):
            return True  # -mTEXT, -fFILE
    return False


def _command(text: str) -> tuple[str | None, str]:
    """Aider's command matching (``commands.py`` ``matching_commands``/``run``):
    ``(command name or None when unknown/ambiguous, its argument)``."""
    words = text.strip().split()
    if not words:
        return None, ""
    first = words[0]
    rest = text.strip()[len(first):].strip()
    name = first[1:]
    if name in COMMANDS:
        return name, rest
    matches = [c for c in COMMANDS if c.startswith(name)]
    return (matches[0], rest) if len(matches) == 1 else (None, rest)


def _decide(blocks: list[AiderBlock], cursor: AiderCursor
            ) -> tuple[list[tuple[AiderBlock, Unit]], AiderSession | None, str | None,
                       list[AiderSession]]:
    session = cursor.session
    echo = cursor.echo
    sessions: list[AiderSession] = []
    out: list[tuple[AiderBlock, Unit]] = []
    for block in blocks:
        at = session.started_ms if session is not None else None
        if block.kind == "session_start":
            session = AiderSession(id=block.session or "", offset=block.offset,
                                   started=block.text, started_ms=_started_ms(block.text))
            sessions.append(session)
            echo = None
            out.append((block, Unit(human=False, reason="session_start",
                                    occurred_at=session.started_ms)))
            continue
        if block.kind == "tool":
            for line in block.text.split("\n"):
                if session is not None and session.command_line is None \
                        and _is_command_line(line):
                    session = msgspec.structs.replace(session, command_line=line,
                                                      program=_is_program(line))
                    sessions = [session if s.id == session.id else s for s in sessions]
                if line.startswith(_EXECUTING):  # /load (or --load) runs a command
                    echo = _echo_for(line[len(_EXECUTING):].strip(), echo)
            out.append((block, Unit(human=False, reason="tool_output", occurred_at=at)))
            continue
        if block.kind == "assistant":
            out.append((block, Unit(human=False, reason="assistant", occurred_at=at)))
            continue
        expected, echo = echo, None
        unit = _decide_user(block.text, session, expected, at)
        if unit.reason in ("typed", "slash_command") and block.text.startswith("/"):
            echo = _echo_for(block.text, None)
        out.append((block, unit))
    return out, session, echo, sessions


def _echo_for(command_text: str, current: str | None) -> str | None:
    """The text a chat command writes again (``""``: any, after ``/help``)."""
    if not command_text.startswith("/"):
        return current
    name, rest = _command(command_text)
    if name in CHAT_COMMANDS and rest:
        return normalize_text(rest)
    if name == "help" and rest:
        return ""
    return current


def _decide_user(text: str, session: AiderSession | None, expected: str | None,
                 at: int | None) -> Unit:
    if session is None:
        return Unit(human=False, reason="no_session", occurred_at=at)
    if session.refusal is not None:
        return Unit(human=False, reason=session.refusal, occurred_at=at)
    normalized = normalize_text(text)
    if not normalized or normalized == _BLANK:
        return Unit(human=False, reason="empty_text", occurred_at=at)
    if expected is not None and expected in ("", normalized):
        return Unit(human=False, reason="command_echo", occurred_at=at)
    if _CONFIRM.fullmatch(normalized):
        return Unit(human=False, reason="confirm_answer", occurred_at=at)
    if normalized.startswith(_WATCH_ASK):
        return Unit(human=False, reason="watch_files", occurred_at=at)
    if normalized.startswith("!"):
        return Unit(human=False, reason="shell", occurred_at=at)
    if normalized.startswith("/"):
        name, rest = _command(text)
        if name == "run":
            return Unit(human=False, reason="shell", occurred_at=at)
        if name in CHAT_COMMANDS and rest:
            return _typed(normalize_text(rest), at)
        return Unit(human=False, reason="slash_command", occurred_at=at)
    return _typed(normalized, at)


def _typed(text: str, at: int | None) -> Unit:
    envelope = gateway_envelope_reason(text)
    if envelope is not None:
        return Unit(human=False, reason=envelope, occurred_at=at)
    return Unit(human=True, reason="typed", text=text, occurred_at=at)
