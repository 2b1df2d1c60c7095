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
  nothing), ``no_session``: a block before any session header. The command
  line's executable may be a Windows path (``C:\\…\\aider``, ``aider.exe``,
  ``…\\aider\\__main__.py``, with spaces) or the browser GUI's
  ``…/aider/gui.py``, whose prompts are sent as written (no ``/`` commands);
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
* ``architect_edit``: the architect's reply, which Aider sends again to its
  editor as user input (``architect_coder.py`` ``reply_completed``): a user
  block whose normalized text is the newest blocks of the preceding reply
  (:class:`~actors.upstream.aider.decide.ReplyShape`);
* ``tool_prompt``: a text Aider writes as user input for the person (the lint
  report after "Fix lint errors in …?", the pre-filled ``What's wrong? Fix``,
  the browser GUI's reflected messages): :mod:`actors.upstream.aider.prompts`;
* ``shell``: ``/run …`` or ``!…`` (a shell command, nothing sent to the model
  unless its output is added); ``slash_command``: any other ``/`` input (Aider
  runs every input starting with ``/`` as a command, ``commands.py``
  ``is_command``; an unknown one is an error, nothing is sent);
* ``empty_text``: ``#### <blank>``;
* ``reply_line``: a ``#### `` line of the model's reply (a Markdown heading
  ending in two spaces). Every ``user_input`` write starts with ``\n`` and every
  write ends with ``\n`` (``append_chat_history``), so a person's block always
  follows a blank line; a reply (``ai_output``: ``\n<text>\n\n``) ends with a
  blank line and the next ``user_input`` adds one, so a person's block after a
  reply follows *two*; and nothing Aider writes after a user block starts with
  a plain line (replies start with ``\n``, tool lines with ``> ``). A user block
  directly after a non-blank line, directly before a plain line, or one blank
  line after a reply's text is therefore part of a reply. So is one directly
  (one blank line) after another user block: that is where a reply that
  *starts* with such a heading lands, and Aider answers every prompt with a
  reply or a ``> `` line before the next one (POLICY, precision first: the
  exception, a prompt after an empty ``<blank>`` one, is kept typed). (POLICY:
  a tool message with a blank line inside, ``> a\n\nb``, looks like a reply,
  so a block one blank line after it is refused too.) A reply that starts with
  such a heading after ``> `` lines (a confirmation asked before it) is not
  told from a prompt;
* ``oversized_block``: a user block of :data:`MAX_BLOCK_BYTES` (the scan cap)
  or more: it cannot be read whole in one scan, so neither the gateway's own
  texts nor a chat command's echo can be told in it (precision first);
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
lines are consumed (a torn last line waits, and so does a user block before
it: the torn line may be its next line). A user block that ends exactly at
the end of the data is complete when it is shorter than
:data:`ATOMIC_WRITE_BYTES` (one ``write(2)``: Python's buffered file writes a
smaller text in one call when the file is closed) and does not end on a
:data:`PAGE_BYTES` boundary (Linux makes one ``write(2)`` visible page by
page, ``generic_perform_write`` growing the size after each page, so a reader
can see a prefix of one write that ends only there); otherwise it waits for
the next line, ``final=True``, or ``settled=True`` (the file has not changed
for :data:`WRITE_SETTLE_MS`, so no write is in flight; the scan asks to be run
again then, since nothing more may ever be written). When the data is a
window that does not reach the file's end (``at_end=False``), its last block
waits: it may go on past the window.

Pure: no I/O, no logging, thread-safe, non-blocking. Message text only
travels in the returned :class:`~actors.upstream.Unit` values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Final

import msgspec

from actors.upstream.aider.decide import (
    CHAT_COMMANDS,
    COMMANDS,
    AiderBlock,
    AiderSession,
    AiderState,
    ReplyShape,
    decide_blocks,
)
from actors.upstream.common import Unit

__all__ = [
    "ATOMIC_WRITE_BYTES",
    "CHAT_COMMANDS",
    "COMMANDS",
    "MAX_BLOCK_BYTES",
    "PAGE_BYTES",
    "WRITE_SETTLE_MS",
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

PAGE_BYTES: Final = 4096
"""The smallest page size: a reader may see part of one write ending on such a boundary."""

WRITE_SETTLE_MS: Final = 250
"""A file unchanged this long has no write in flight (one ``write(2)`` lands in
microseconds): a user block waiting on :data:`ATOMIC_WRITE_BYTES` or
:data:`PAGE_BYTES` is then complete."""

MAX_BLOCK_BYTES: Final = 1 << 20
"""A user block this long or longer is ``oversized_block`` (the default scan cap)."""

_HEADER: Final = "# aider chat started at "
_BLANK: Final = "<blank>"
"""What Aider writes for a prompt submitted empty."""
_USER: Final = "#### "
_TOOL: Final = "> "


class AiderCursor(msgspec.Struct, frozen=True, kw_only=True):
    """Where reading stands: the next byte offset and the state it needs.

    Attributes:
        offset: the byte offset of the next unread line.
        session: the session being read (``None`` before the first header).
        echo: the text a chat command's sub-coder is expected to write again
            next (``command_echo``), ``""`` for any text (after ``/help``), or ``None``.
        in_line: ``offset`` is inside a line longer than the scan cap (see
            :func:`past_long_line`): the bytes up to its newline are skipped.
        skipping: ``offset`` is inside a user block longer than the scan cap
            (``oversized_block``): its further ``#### `` lines are skipped.
        last: the kind of the last non-blank line before ``offset``:
            ``session_start``, ``tool``, ``user``, ``empty`` (a user block of
            ``<blank>``), ``reply`` (a plain line of a reply), ``continued`` (a
            plain line continuing a tool message), or ``None`` when not known
            (the start of the file, an older marker).
        blanks: blank lines between that line and ``offset``.
        reply: the shape of the last reply
            (:class:`~actors.upstream.aider.decide.ReplyShape`), or ``None``.
    """

    offset: int = 0
    session: AiderSession | None = None
    echo: str | None = None
    in_line: bool = False
    skipping: bool = False
    last: str | None = None
    blanks: int = 0
    reply: ReplyShape | None = None


class AiderRead(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`read_aider_history` found.

    Attributes:
        decisions: ``(block, unit)`` for every complete block, in file order.
        cursor: where the next read starts.
        sessions: every session whose header was read, in file order.
        waits_on_write: the last user block waits only because a write may
            still be in flight (long, or ending on a page boundary): read it
            again once the file settled, even if nothing more is written.
    """

    decisions: tuple[tuple[AiderBlock, Unit], ...]
    cursor: AiderCursor
    sessions: tuple[AiderSession, ...]
    waits_on_write: bool = False

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
                       final: bool = False, at_end: bool = True, settled: bool = False,
                       max_block: int = MAX_BLOCK_BYTES) -> AiderRead:
    """Decide every complete block of ``data``, the file's bytes from ``cursor.offset``.

    Args:
        data: the file's content from ``cursor.offset`` on (the whole file for a
            new cursor). Bytes that are not UTF-8 are replaced (Aider writes
            with ``errors="ignore"``).
        cursor: the previous read's cursor, or ``None`` to read from the start.
        final: the file is complete (no writer): a trailing block is decided
            even when it could still grow, and a last line without its newline
            is read.
        at_end: ``data`` reaches the file's end; ``False`` for a window cut
            short by the scan cap (its last block waits).
        settled: no write can be in flight (the file has not changed for
            :data:`WRITE_SETTLE_MS`): a user block that ends at the data's end is
            complete even when long or on a page boundary.
        max_block: bytes from which a user block is ``oversized_block`` (the
            scan cap in use).

    Returns:
        The decisions, the next cursor and the sessions started in ``data``.

    Pure: no I/O, no logging, thread-safe, non-blocking.
    """
    cursor, data = _skip_carried(data, cursor or AiderCursor())
    if cursor.in_line or cursor.skipping:  # the data ended inside what is skipped
        return AiderRead(decisions=(), cursor=cursor, sessions=())
    base = cursor.offset
    lines = list(_lines(data, final))
    waits = False
    blocks: list[AiderBlock] = []
    consumed = 0
    i = 0
    last, blanks = cursor.last, cursor.blanks
    session_id = cursor.session.id if cursor.session is not None else None
    while i < len(lines):
        start, end, line = lines[i]
        kind = _kind(line)
        if kind == "blank":
            consumed, blanks = end, blanks + 1
            i += 1
            continue
        if kind == "session_start":
            session_id = f"aider@{base + start}"
            blocks.append(AiderBlock(offset=base + start, end=base + end, kind=kind,
                                     text=line[len(_HEADER):].strip(), session=session_id))
            consumed, last, blanks = end, kind, 0
            i += 1
            continue
        j = i
        texts: list[str] = []
        while j < len(lines) and _kind(lines[j][2]) == kind:
            texts.append(_strip(kind, lines[j][2]))
            j += 1
        block_end = lines[j - 1][1]
        if j == len(lines) and not final and _may_grow(kind, base, start, block_end, data,
                                                       at_end, settled):
            waits = kind == "user" and at_end and block_end == len(data) and not settled
            break
        after = _kind(lines[j][2]) if j < len(lines) else None
        in_reply = kind == "user" and (
            (blanks == 0 and last is not None) or after == "assistant"
            or (blanks == 1 and last == "reply"))
        blocks.append(AiderBlock(offset=base + start, end=base + block_end, kind=kind,
                                 text="\n".join(texts), session=session_id, in_reply=in_reply,
                                 after_user=kind == "user" and blanks == 1 and last == "user",
                                 oversized=kind == "user" and block_end - start >= max_block))
        last = _last_of(kind, in_reply, last, blanks, texts)
        consumed, blanks = block_end, 0
        i = j
    decisions, state, sessions = decide_blocks(
        blocks, AiderState(session=cursor.session, echo=cursor.echo, reply=cursor.reply))
    return AiderRead(decisions=tuple(decisions),
                     cursor=AiderCursor(offset=base + consumed, session=state.session,
                                        echo=state.echo, reply=state.reply,
                                        last=last, blanks=blanks),
                     sessions=tuple(sessions), waits_on_write=waits)


def _skip_carried(data: bytes, cursor: AiderCursor) -> tuple[AiderCursor, bytes]:
    """Skip what a previous window left half read: the rest of a long line
    (``in_line``), then the further lines of an oversized user block (``skipping``).
    Returns the cursor and data after them (flags still set when ``data`` ended first)."""
    if cursor.in_line:
        nl = data.find(b"\n")
        if nl < 0:
            return msgspec.structs.replace(cursor, offset=cursor.offset + len(data)), b""
        cursor = msgspec.structs.replace(cursor, offset=cursor.offset + nl + 1, in_line=False,
                                         blanks=0)
        data = data[nl + 1:]
    if not cursor.skipping:
        return cursor, data
    pos = 0
    for _, end, line in _lines(data, False):
        if _kind(line) != "user":
            return msgspec.structs.replace(cursor, offset=cursor.offset + pos,
                                           skipping=False), data[pos:]
        pos = end
    tail, prefix = data[pos:], _USER.encode()
    if tail and not (tail.startswith(prefix) or prefix.startswith(tail)):
        # the torn line after them is not a user line: the block ended
        return msgspec.structs.replace(cursor, offset=cursor.offset + pos,
                                       skipping=False), data[pos:]
    return msgspec.structs.replace(cursor, offset=cursor.offset + pos), b""


def _may_grow(kind: str, base: int, start: int, block_end: int, data: bytes,
              at_end: bool, settled: bool) -> bool:
    """Whether the last block of ``data`` (not ``final``) must wait for more."""
    if not at_end:
        return True  # the window was cut: the block may go on past it
    if kind != "user":
        # A tool or assistant block at the end may grow; it is never typed, but
        # reading it again later would split it: stop before it.
        return block_end == len(data)
    if block_end < len(data):
        return True  # a torn line follows: it may be the block's next line
    if settled:
        return False  # no write in flight: what is there is all of it
    return block_end - start >= ATOMIC_WRITE_BYTES or (base + block_end) % PAGE_BYTES == 0


def _last_of(kind: str, in_reply: bool, last: str | None, blanks: int,
             texts: list[str]) -> str:
    """The cursor's ``last`` after a block of ``kind`` with lines ``texts``."""
    if kind == "assistant":
        return "continued" if blanks == 0 and last == "tool" else "reply"
    if kind == "user" and in_reply:
        return "reply"
    if kind == "user" and all(t.strip() in ("", _BLANK) for t in texts):
        return "empty"  # Enter on an empty prompt: a person's next block follows it
    return kind


def past_long_line(data: bytes, cursor: AiderCursor) -> AiderCursor | None:
    """Where to go on when ``data`` (a full scan window from ``cursor.offset``) holds no
    complete block: the cursor past the block that fills it, or ``None``.

    A block longer than the window would stall every scan (nothing complete to
    decide). Its complete lines are skipped, and a line with no newline in the
    window is skipped to its end (``in_line``). A reply or tool block is never
    typed; a user block (``#### ``) that long is ``oversized_block``, so its
    further lines in the next windows are skipped too (``skipping``), and it
    counts neither once nor per window. A header gives ``None`` (waited for).
    Pure; thread-safe; never raises.
    """
    if cursor.in_line or not data:
        return None
    nl = data.find(b"\n")
    first = data[:nl if nl >= 0 else len(data)].decode("utf-8", "replace").rstrip("\r")
    if first.startswith(_HEADER) or _HEADER.startswith(first) or not first.strip():
        return None
    user = first.startswith(_USER)
    nl = data.rfind(b"\n")
    kind = "user" if user else "tool" if first.startswith(_TOOL) else "reply"
    # Past the complete lines (the torn one after them is read whole next time),
    # or, with no newline at all, past the window inside the one long line.
    return msgspec.structs.replace(
        cursor, offset=cursor.offset + (nl + 1 if nl >= 0 else len(data)),
        in_line=nl < 0, skipping=user, last=kind, blanks=0)


def classify_aider_history(data: bytes, max_block: int = MAX_BLOCK_BYTES
                           ) -> list[tuple[AiderBlock, Unit]]:
    """Every block of a whole chat history decided, as ``ssa classify`` shows it.

    Args:
        data: the whole file.
        max_block: bytes from which a user block is ``oversized_block`` (the scan cap).

    Returns:
        ``(block, unit)`` in file order (``final`` reading: nothing waits). Pure.
    """
    return list(read_aider_history(data, final=True, max_block=max_block).decisions)


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
