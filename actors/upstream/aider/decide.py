"""Aider's decisions on the blocks of a chat history: which user blocks a person typed.

The rules and their proof in Aider 0.86.2's source are :mod:`actors.upstream.aider.classify`'s
docstring (and docs/upstream-aider.md); this module holds the session state
(:class:`AiderSession`), the block (:class:`AiderBlock`) and
:func:`decide_blocks`. Pure: no I/O, no logging, thread-safe, non-blocking.
"""

from __future__ import annotations

import hashlib
import re
import time
from datetime import datetime
from typing import Final

import msgspec

from actors.upstream.aider.prompts import AIDER_PROMPTS
from actors.upstream.common import Unit, gateway_envelope_reason, normalize_text

__all__ = ["CHAT_COMMANDS", "COMMANDS", "AiderBlock", "AiderSession", "AiderState",
           "ReplyShape", "decide_blocks"]

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
        gui: the session is the browser GUI's (``aider --gui``): its prompts are
            sent as written (no ``/`` commands, no ``!`` shell).
    """

    id: str
    offset: int
    started: str
    started_ms: int | None = None
    command_line: str | None = None
    program: bool = False
    gui: bool = False

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
        in_reply: a user block laid out as part of a reply (``reply_line``).
        after_user: a user block one blank line after another user block: a
            chat command's echo, or else the heading a reply starts with
            (``reply_line``).
        oversized: a user block of ``max_block`` bytes or more (``oversized_block``).
    """

    offset: int
    end: int
    kind: str
    text: str
    session: str | None
    in_reply: bool = False
    after_user: bool = False
    oversized: bool = False

def _started_ms(text: str) -> int | None:
    try:
        parsed = datetime.strptime(text, _HEADER_TIME)
    except ValueError:
        return None
    return int(time.mktime(parsed.timetuple())) * 1000


_PATH_ROOT: Final = re.compile(r"(?:[A-Za-z]:[\\/]|\\\\|[/~.])")
"""How a path with spaces in it starts: a drive letter, a UNC ``\\\\``, ``/``, ``~``, ``.``."""

_BANNER: Final = re.compile(r"Aider v\d")
"""Aider's version line (``Aider v0.86.2``), logged after the command line: never the
command line itself (a program that calls ``aider.main.main(argv)`` logs its own
``sys.argv`` first, so the banner would otherwise pass for an ``aider`` launch)."""

_ARGV0_MAX: Final = 1024
"""The longest executable path with spaces looked for at the start of a tool line."""


def _launched_as(line: str) -> str | None:
    """Whether a tool line is the logged ``sys.argv`` (``main.py``: ``" ".join(sys.argv)``),
    and of which front end: ``"cli"`` when its first word is the ``aider`` executable
    (any directory; ``aider.exe``, a Windows launcher's ``aider`` without ``.exe``) or
    Aider's ``aider/__main__.py`` (``python -m aider``), ``"gui"`` when it is
    ``aider/gui.py`` (the browser GUI: ``aider --gui`` runs ``streamlit run
    aider/gui.py -- <args>``, whose ``main()`` logs the script as ``sys.argv[0]``),
    else ``None``. Directories may use ``\\`` (Windows) and hold spaces
    (``C:\\Program Files\\…``: the joined line does not quote them)."""
    head = line[:_ARGV0_MAX]
    ends = [i for i, ch in enumerate(head) if ch == " "] + [len(line)]
    if not _PATH_ROOT.match(head):
        ends = ends[:1]  # a first word with spaces in it must be a path
    for end in ends:
        first = line[:end]
        parts = re.split(r"[\\/]", first)
        name = parts[-1].lower()
        parent = parts[-2].lower() if len(parts) > 1 else ""
        if name == "aider" or name.startswith("aider."):
            return "cli"
        if parent == "aider" and name == "__main__.py":
            return "cli"
        if parent == "aider" and name == "gui.py":
            return "gui"
    return None


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


_REPLY_PIECES: Final = 64
"""The most reply blocks a :class:`ReplyShape` keeps (the newest)."""


class ReplyShape(msgspec.Struct, frozen=True, kw_only=True):
    """The last reply, as much as tells whether a text repeats it (no text kept).

    A reply with blank lines in it is several assistant blocks, and replies
    written one after the other (no prompt between) run together; the text
    Aider sends again is the last reply: the newest blocks. Kept: the
    normalized length and SHA-256 hex of each block (at most
    :data:`_REPLY_PIECES`, the newest).

    Attributes:
        pieces: ``(characters, SHA-256 hex)`` of each block's normalized text,
            oldest first.
        open: the reply may go on (no other block came after its last one).
    """

    pieces: tuple[tuple[int, str], ...]
    open: bool = True

    def extended(self, text: str) -> ReplyShape:
        """This reply with one more block of normalized ``text``. Pure."""
        pieces = (*self.pieces, (len(text), _digest(text)))
        return ReplyShape(pieces=pieces[-_REPLY_PIECES:], open=self.open)

    def repeated_by(self, text: str) -> bool:
        """Whether normalized ``text`` is the newest blocks of this reply, joined by one
        space (the whole reply, or its last replies when several ran together). Pure."""
        end = len(text)
        for size, digest in reversed(self.pieces):
            start = end - size
            if start < 0 or _digest(text[start:end]) != digest:
                return False
            if start == 0:
                return True
            if text[start - 1] != " ":
                return False
            end = start - 1
        return False


def _reply_shape(text: str) -> ReplyShape:
    return ReplyShape(pieces=((len(text), _digest(text)),))


class AiderState(msgspec.Struct, frozen=True, kw_only=True):
    """What deciding carries from one block to the next (and across reads).

    Attributes:
        session: the session being read (``None``: none yet).
        echo: the text a chat command's sub-coder is expected to write again
            next (``""``: any), or ``None``.
        reply: the shape of the last reply (an architect's reply, which Aider sends
            its editor as user input: ``architect_edit``), or ``None``.
    """

    session: AiderSession | None = None
    echo: str | None = None
    reply: ReplyShape | None = None


def decide_blocks(blocks: list[AiderBlock], state: AiderState
                  ) -> tuple[list[tuple[AiderBlock, Unit]], AiderState, list[AiderSession]]:
    """Decide ``blocks`` in file order, from the state before them.

    Args:
        blocks: complete blocks, oldest first.
        state: the state before the first block.

    Returns:
        ``(decisions, state after, sessions started)``. Pure.
    """
    session, echo, reply = state.session, state.echo, state.reply
    sessions: list[AiderSession] = []
    out: list[tuple[AiderBlock, Unit]] = []
    for block in blocks:
        at = session.started_ms if session is not None else None
        if block.kind == "session_start":
            session = AiderSession(id=block.session or "", offset=block.offset,
                                   started=block.text, started_ms=_started_ms(block.text))
            sessions.append(session)
            echo = reply = None
            out.append((block, Unit(human=False, reason="session_start",
                                    occurred_at=session.started_ms)))
            continue
        if block.kind == "tool":
            if reply is not None and reply.open:
                reply = msgspec.structs.replace(reply, open=False)
            for line in block.text.split("\n"):
                launched = _launched_as(line) if session is not None \
                    and session.command_line is None and not _BANNER.match(line) else None
                if session is not None and launched is not None:
                    session = msgspec.structs.replace(session, command_line=line,
                                                      program=_is_program(line),
                                                      gui=launched == "gui")
                    sessions = [session if s.id == session.id else s for s in sessions]
                if line.startswith(_EXECUTING):  # /load (or --load) runs a command
                    echo = _echo_for(line[len(_EXECUTING):].strip(), echo)
            out.append((block, Unit(human=False, reason="tool_output", occurred_at=at)))
            continue
        if block.kind == "assistant":
            text = normalize_text(block.text)
            if text:
                reply = reply.extended(text) if reply is not None and reply.open \
                    else _reply_shape(text)
            out.append((block, Unit(human=False, reason="assistant", occurred_at=at)))
            continue
        expected, echo = echo, None
        if block.after_user and not block.in_reply and not block.oversized:
            unit = _decide_user(block.text, session, expected, at)
            if unit.reason != "command_echo" and _session_refusal(session, at) is None:
                unit = Unit(human=False, reason="reply_line", occurred_at=at)
            out.append((block, unit))
            continue
        if block.in_reply or block.oversized:
            refusal = "reply_line" if block.in_reply else "oversized_block"
            refused = _session_refusal(session, at)
            out.append((block, refused if refused is not None
                        else Unit(human=False, reason=refusal, occurred_at=at)))
            continue
        unit = _decide_user(block.text, session, expected, at)
        if unit.human and reply is not None and reply.repeated_by(normalize_text(block.text)):
            unit = Unit(human=False, reason="architect_edit", occurred_at=at)
        reply = None
        if unit.reason in ("typed", "slash_command") and block.text.startswith("/") \
                and not (session is not None and session.gui):
            echo = _echo_for(block.text, None)
        out.append((block, unit))
    return out, AiderState(session=session, echo=echo, reply=reply), sessions


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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


def _session_refusal(session: AiderSession | None, at: int | None) -> Unit | None:
    """Why no block of ``session`` counts (``no_session`` before any header), or ``None``."""
    if session is None:
        return Unit(human=False, reason="no_session", occurred_at=at)
    if session.refusal is not None:
        return Unit(human=False, reason=session.refusal, occurred_at=at)
    return None


def _decide_user(text: str, session: AiderSession | None, expected: str | None,
                 at: int | None) -> Unit:
    refused = _session_refusal(session, at)
    if refused is not None:
        return refused
    normalized = normalize_text(text)
    if not normalized or normalized == _BLANK:
        return Unit(human=False, reason="empty_text", occurred_at=at)
    if expected is not None and expected in ("", normalized):
        return Unit(human=False, reason="command_echo", occurred_at=at)
    if _CONFIRM.fullmatch(normalized):
        return Unit(human=False, reason="confirm_answer", occurred_at=at)
    if normalized.startswith(_WATCH_ASK):
        return Unit(human=False, reason="watch_files", occurred_at=at)
    if AIDER_PROMPTS.match(normalized) is not None:
        return Unit(human=False, reason="tool_prompt", occurred_at=at)
    if session is not None and session.gui:
        return _typed(normalized, at)  # gui.py sends it as written (Coder.run_stream)
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
