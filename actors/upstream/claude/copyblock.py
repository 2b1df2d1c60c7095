"""The copied block at the head of a Claude Code transcript, told from the file itself (issue 32).

When a conversation goes on in a new session file (Claude Desktop reopening
or forking a conversation, ``claude --resume ID`` from another folder or
with ``--fork-session``, ``--continue --fork-session``), Claude Code writes
the earlier session's rows into the new file, each with its ``uuid`` and
``timestamp`` kept, before the new session's own rows. The copies name the
earlier session themselves, one way or another:

* 2.1.328 run as ``claude -p PROMPT --resume ID --fork-session`` in another
  folder than the session's (checked with the real binary): a new file in
  that folder's project directory, ``mode``, ``atis-latch``, the prompt's
  ``queue-operation`` rows, the copies, then the prompt (``--resume ID``
  without ``--fork-session`` appends to the earlier session's own file);
* Claude Desktop's copies keep the earlier ``sessionId`` (rows written
  after the fork carry the new one: anthropics/claude-code#95234,
  #93859, Desktop engine 2.1.2xx);
* 2.1.328 rewrites ``sessionId`` on every copy and stamps a copied
  assistant row with ``requestSessionId`` naming the earlier session
  (the session writer's ``insertMessageChain`` in the shipped binary:
  ``if ("sessionId" in m && m.sessionId !== current) row.requestSessionId
  = ...``; a row of the session's own never carries it);
* ``/branch`` stamps every copy with ``forkedFrom`` (decided by the row
  alone in :mod:`actors.upstream.claude.classify`).

A row carrying any of these marks is a *marked copy*. The file's own id is
its name; a file whose name is not a session id (an export, a copy kept under
another name) has no known own id and no copied block. The new session's
own start is its first row that is certainly its own: a ``queue-operation``
with the file's own ``sessionId`` (the Agent SDK, hence Desktop, logs every
prompt it is given so, often as the file's first line), or, in a file whose
first row with a ``uuid`` carries another session's id, the first row with
the file's own id. The copied block's *boundary* is the newest time among
the marked copies made before the own start (all of them when no own start
is seen); when the own start was written before every marked copy (the
layout ``claude -p --resume ID --fork-session`` and the Agent SDK write: the
prompt's ``queue-operation`` rows, then the copies, then the prompt), it is
the own start itself, so an unanswered copied prompt is a copy too. Every
prompt typed in the new session is typed after the copy was made, so after
that boundary; a typed row of the file whose time is not after it was typed
before the copy, in the earlier session: a copy.

Marked rows made after the own start (another session's row appearing later
in a file) never move the boundary. A reply of the session's own (an
``assistant`` row with its id, naming no other session) read before any
marked copy ends the reading: the file has no copied block (a continued
file's first reply is a copy). Conservative: a copied block with no
marked row (a 2.1.328 copy of a single prompt with no reply) gives no
boundary (the sibling search of :mod:`actors.upstream.claude.copies` may
still find its original).

:func:`copy_boundary` reads at most :data:`HEAD_BYTES` of a transcript's head,
once per file: the state is kept per (device, inode) and later calls read
only the bytes written since. Runs in the caller's thread; blocks on bounded
reads under a module lock; never raises.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping

import msgspec

from actors.upstream.common import epoch_ms
from actors.upstream.files import open_regular

__all__ = ["HEAD_BYTES", "CopiedBlock", "copy_boundary", "is_session_id"]

HEAD_BYTES = 8 << 20
"""Most bytes of a transcript's head read for its copied block."""
CHUNK_BYTES = 1 << 20
"""Bytes read at a time."""
CACHED_FILES = 256
"""Transcripts whose head state is kept (least recently used dropped first)."""


class _Row(msgspec.Struct, rename="camel"):
    type: object = None
    uuid: object = None
    session_id: object = None
    request_session_id: object = None
    forked_from: object = None
    timestamp: object = None


_ROW = msgspec.json.Decoder(_Row)
_SESSION_ID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


def is_session_id(name: str) -> bool:
    """Whether ``name`` (a transcript's file stem) is a Claude Code session id: only such a
    file has a known own id, and rows of another session to tell apart (pure)."""
    return _SESSION_ID.fullmatch(name) is not None
"""A Claude Code session id: the name of every transcript Claude Code writes."""


def _named(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class CopiedBlock:
    """The copied block of one transcript, fed its lines in file order.

    Args:
        own_id: the file's own session id (its name without ``.jsonl``).

    Pure (no I/O); not thread-safe (the caller serialises feeding).
    """

    def __init__(self, own_id: str) -> None:
        self.own_id = own_id
        self.own_start: int | None = None
        """When the new session's first certainly-own row was written (epoch ms)."""
        self.done = False
        """Nothing later can change the boundary: the own start is known and a later own
        row was read, or the session's own reply came before any copy."""
        self._marked: list[int] = []
        self._first_uuid_foreign: bool | None = None
        self._start_first = False

    def feed(self, line: bytes) -> None:
        """Read one complete line (without its newline). Never raises."""
        if self.done:
            return
        try:
            row = _ROW.decode(line)
        except (msgspec.MsgspecError, RecursionError):
            return
        at = epoch_ms(row.timestamp)
        session = _named(row.session_id)
        foreign = session is not None and session != self.own_id
        request = _named(row.request_session_id)
        marked = foreign or (request is not None and request != self.own_id) or isinstance(
            row.forked_from, Mapping)
        has_uuid = isinstance(row.uuid, str)
        if has_uuid and self._first_uuid_foreign is None:
            self._first_uuid_foreign = foreign
        if marked:
            if at is not None:
                self._marked.append(at)
            return
        if at is None or session != self.own_id:
            return
        if row.type == "assistant" and not self._marked:
            self.done = True  # the session's own reply before any copy: no copied block
            return
        if self.own_start is None:
            if row.type == "queue-operation" or (has_uuid and self._first_uuid_foreign):
                self.own_start = at
                self._start_first = not self._marked
        elif has_uuid and at >= self.own_start:
            self.done = True

    def boundary(self) -> int | None:
        """The newest time a copy can have (epoch ms), or ``None`` (no copied block).

        The newest marked copy made before the own start; when the own start
        was written before every marked copy (the Agent SDK's layout), the
        moment before the own start itself: every row older than it came
        with the copy, whatever it holds.
        """
        start = self.own_start
        times = [at for at in self._marked if start is None or at < start]
        if not times:
            return None
        if start is not None and self._start_first:
            return start - 1
        return max(times)


class _State:
    def __init__(self, own_id: str, size: int) -> None:
        self.block = CopiedBlock(own_id)
        self.offset = 0
        self.size = size


_LOCK = threading.Lock()
_STATES: OrderedDict[tuple[str, int, int], _State] = OrderedDict()


def _read_on(path: str, state: _State, size: int) -> None:
    """Feed the complete lines between ``state.offset`` and ``size`` (at most HEAD_BYTES)."""
    handle = open_regular(path)
    if handle is None:
        return
    with handle:
        handle.seek(state.offset)
        tail = b""
        while not state.block.done and state.offset + len(tail) < min(size, HEAD_BYTES):
            want = min(CHUNK_BYTES, HEAD_BYTES - state.offset - len(tail))
            chunk = handle.read(want)
            if not chunk:
                break
            data = tail + chunk
            end = data.rfind(b"\n")
            if end < 0:
                tail = data
                continue
            for line in data[:end].split(b"\n"):
                state.block.feed(line.rstrip(b"\r"))
            state.offset += end + 1
            tail = data[end + 1:]
        if state.offset + len(tail) >= HEAD_BYTES:
            state.block.done = True  # a line reaching past the head: read no further


def copy_boundary(path: str) -> int | None:
    """:meth:`CopiedBlock.boundary` of the transcript ``path`` (its own id: the file's name).

    Reads only what earlier calls have not (see the module docstring); an
    unreadable file, or one that shrank, starts over. Blocks on bounded
    reads under a module lock (any thread); never raises.
    """
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    own_id = os.path.basename(path).removesuffix(".jsonl")
    if not is_session_id(own_id):
        return None  # renamed (an export, a copy under another name): its own id is unknown
    key = (own_id, info.st_dev, info.st_ino)
    with _LOCK:
        state = _STATES.get(key)
        if state is None or info.st_size < state.size:
            state = _State(own_id, info.st_size)
            _STATES[key] = state
        _STATES.move_to_end(key)
        while len(_STATES) > CACHED_FILES:
            _STATES.popitem(last=False)
        state.size = info.st_size
        if not state.block.done and state.offset < min(info.st_size, HEAD_BYTES):
            with contextlib.suppress(OSError):
                _read_on(path, state, info.st_size)
        return state.block.boundary()
