"""``ssa mcp``'s stdio transport: the SDK's, behind a guard on every request line.

The MCP SDK's stdio transport reads a whole line, however long, and drops a
line it cannot parse without a word: a request holding a lone surrogate
escape (JSON ``"\\ud800"``, which pydantic refuses) got no answer at all,
and the client waited forever; a 4 MiB request was read, copied and parsed
whole (nothing kept it afterwards, but glibc keeps such freed blocks in its
per-thread arenas: 40 sends of 4 MiB took the server from 77 to 160-258 MB).

Here each line is read with a bound (:data:`MAX_REQUEST_BYTES`; the rest of a
longer one is skipped in small chunks, never held) and checked before the
SDK sees it: one it would drop gets a JSON-RPC error answer instead, with
the request's id when it can be found (``-32700`` for a line that is no
JSON, ``-32600`` for the rest). Lines that pass go to the SDK unchanged.

What lives here: :func:`request_problem` (pure: why a line is refused),
:class:`RequestLines` (the bounded reader) and :func:`run` (the loop). Needs
the ``mcp`` extra: :mod:`actors.agents.mcp_server` imports it only to serve.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any, NamedTuple

import anyio
import mcp_types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

__all__ = ["ANSWER_GRACE_S", "MAX_REQUEST_BYTES", "Refusal", "RequestLines", "Unanswered",
           "request_problem", "run"]

MAX_REQUEST_BYTES = 1024 * 1024
"""The longest request line read, in bytes (with its newline): sixty times the longest
text ``sessions_send`` takes, even with every character escaped as ``\\uXXXX``."""
_SKIP_BYTES = 64 * 1024
"""How much of an over-long line is read at a time while it is skipped."""
PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_ID_FIRST = re.compile(
    rb'\s*\{(?:\s*"(?:[^"\\]|\\.)*"\s*:\s*(?:"(?:[^"\\]|\\.)*"|-?\d+|true|false|null)\s*,)*?'
    rb'\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
"""``"id"`` among the simple members that open a request (clients write ``jsonrpc``,
``id`` and ``method`` before ``params``): the id of a line too long to parse."""


class Refusal(NamedTuple):
    """A JSON-RPC error answer for a line the server does not take.

    Attributes:
        request_id: the request's id (``None``: not found, answered as ``null``).
        code: the JSON-RPC error code.
        message: one sentence.
    """

    request_id: int | str | None
    code: int
    message: str


def _id_of(value: object) -> int | str | None:
    """A JSON-RPC id (an int that is no bool, or a str), else ``None`` (pure)."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def request_problem(line: str) -> Refusal | None:
    """Why the SDK would drop request ``line`` unanswered, or ``None`` (it takes it; pure).

    Blank lines are taken (the SDK skips nothing; they are filtered before).
    """
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:  # pydantic's ValidationError
        errors = exc.errors() if hasattr(exc, "errors") else []
        detail = (f"{'.'.join(map(str, errors[0]['loc']))}: {errors[0]['msg']}" if errors
                  else "not a JSON-RPC message")
    else:
        return None
    try:
        parsed = json.loads(line)  # Python's JSON takes lone surrogates; pydantic does not
    except ValueError:
        return Refusal(None, PARSE_ERROR, "the request is not JSON")
    request_id = _id_of(parsed.get("id")) if isinstance(parsed, dict) else None
    try:
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return Refusal(request_id, INVALID_REQUEST,
                       "the request holds a lone surrogate escape (\\ud800 to \\udfff alone), "
                       "which is no Unicode text")
    return Refusal(request_id, INVALID_REQUEST, f"not a valid JSON-RPC request: {detail}")


def _id_in_prefix(prefix: bytes) -> int | str | None:
    """The id of an over-long request, from the members before its ``params`` (pure)."""
    found = _ID_FIRST.match(prefix)
    if found is None:
        return None
    try:
        return _id_of(json.loads(found.group(1)))
    except ValueError:
        return None


class RequestLines:
    """The request lines of ``fd``, bounded, as the SDK's transport reads its stdin.

    An async iterator of ``str`` lines (UTF-8, bad bytes replaced, as the SDK
    decodes them). A line longer than ``limit`` or one :func:`request_problem`
    refuses is answered on the stream given to :meth:`answer_on` and not
    passed on. Reads run in a worker thread (anyio), one at a time.

    Args:
        fd: the descriptor to read (never closed here: a read may still block
            on it when the server stops).
        limit: the longest line taken, in bytes.
    """

    def __init__(self, fd: int, limit: int = MAX_REQUEST_BYTES,
                 unanswered: Unanswered | None = None) -> None:
        self._reader = os.fdopen(fd, "rb", closefd=False)
        self._limit = limit
        self._answers: Any = None
        self._ready = anyio.Event()
        self._unanswered = unanswered

    def answer_on(self, stream: Any) -> None:
        """Answer refused lines on ``stream`` (the transport's write stream); call once."""
        self._answers = stream
        self._ready.set()

    def __aiter__(self) -> RequestLines:
        """This iterator."""
        return self

    async def __anext__(self) -> str:
        """The next line the SDK takes; ``StopAsyncIteration`` at end of input.

        Event loop; awaits a worker thread's read and the answers of refused lines.
        """
        await self._ready.wait()
        while True:
            line, whole = await anyio.to_thread.run_sync(self._read_line)
            if line is None:
                if self._unanswered is not None:
                    # The client closed its end after its last request: answer what was
                    # asked before the server stops (a drain acknowledges as it runs).
                    await self._unanswered.settled(ANSWER_GRACE_S)
                raise StopAsyncIteration
            if not whole:
                await self._refuse(Refusal(
                    _id_in_prefix(line[:4096]), INVALID_REQUEST,
                    f"the request is longer than {self._limit} bytes"))
                continue
            text = line.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            refusal = request_problem(text)
            if refusal is None:
                if self._unanswered is not None:
                    self._unanswered.asked(text)
                return text
            await self._refuse(refusal)

    def _read_line(self) -> tuple[bytes | None, bool]:
        """``(line, whole)``: a line of at most ``limit`` bytes, or the start of a longer one
        whose rest was skipped (``whole`` false); ``(None, True)`` at end of input.
        Worker thread; blocks on the descriptor."""
        line = self._reader.readline(self._limit + 1)
        if not line:
            return None, True
        if line.endswith(b"\n") or len(line) <= self._limit:
            return line, True
        while (rest := self._reader.readline(_SKIP_BYTES)) and not rest.endswith(b"\n"):
            pass
        return line, False

    async def _refuse(self, refusal: Refusal) -> None:
        """Send the JSON-RPC error answer for a refused line."""
        await self._answers.send(SessionMessage(mcp_types.JSONRPCError(
            jsonrpc="2.0", id=refusal.request_id,
            error=mcp_types.ErrorData(code=refusal.code, message=refusal.message))))


ANSWER_GRACE_S = 30.0
"""How long the server still runs after its input ended, for requests not answered yet."""


class Unanswered:
    """The ids of the requests read and not answered yet (event loop only).

    At the end of input the server waits (at most a grace) until these are
    answered: a tool such as ``drain`` acts as it runs, and its answer must
    not be lost because the client closed stdin right after asking.
    """

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._empty = anyio.Event()
        self._empty.set()

    def asked(self, line: str) -> None:
        """Note a request line (one with an ``id`` and a ``method``); pure but for the set."""
        try:
            value = json.loads(line)
        except ValueError:
            return
        if isinstance(value, dict) and "method" in value and _id_of(value.get("id")) is not None:
            self._ids.add(json.dumps(value["id"]))
            if self._empty.is_set():
                self._empty = anyio.Event()

    def answered(self, text: str) -> None:
        """Note an outgoing message: a response (``result`` or ``error``) settles its id."""
        try:
            value = json.loads(text)
        except ValueError:
            return
        if isinstance(value, dict) and ("result" in value or "error" in value):
            self._ids.discard(json.dumps(value.get("id")))
            if not self._ids:
                self._empty.set()

    async def settled(self, grace_s: float) -> None:
        """Wait until every request read was answered, at most ``grace_s`` seconds."""
        with anyio.move_on_after(grace_s):
            await self._empty.wait()


class _AnsweringOut:
    """The SDK's stdout (an ``anyio`` text file) that tells :class:`Unanswered` what went out."""

    def __init__(self, real: Any, unanswered: Unanswered) -> None:
        self._real = real
        self._unanswered = unanswered

    async def write(self, text: str) -> int:
        """Write ``text`` (one JSON message and its newline); then note its id answered."""
        written: int = await self._real.write(text)
        await self._real.flush()
        self._unanswered.answered(text)
        return written

    async def flush(self) -> None:
        """Flush the real stdout."""
        await self._real.flush()


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[int]:
    """A private duplicate of fd 0 while fd 0 reads the null device (as the SDK does):
    a child a tool handler starts never eats the requests. fd 0 is restored after."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield private
    finally:
        os.dup2(private, 0)  # private stays open: a worker thread may still read it


@contextlib.contextmanager
def _claimed_stdout() -> Iterator[int]:
    """A private duplicate of fd 1 while fd 1 writes to stderr (as the SDK does): a stray
    print of a handler or a child never corrupts the protocol. fd 1 is restored after."""
    sys.stdout.flush()
    private = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(2, 1)
    try:
        yield private
    finally:
        os.dup2(private, 1)
        os.close(private)


def run(server: Any) -> None:
    """Serve ``server`` (an ``MCPServer``) over stdin/stdout until stdin ends.

    As ``MCPServer.run()`` (stdio), with the requests read through
    :class:`RequestLines`. Calling thread (it runs an event loop); blocks
    until end of input.
    """
    anyio.run(_serve, server)


async def _serve(server: Any) -> None:
    # MCPServer has no public name for its low-level server yet: the SDK's own
    # in-memory Client reaches it the same way (its "TODO: make public").
    lowlevel = server._lowlevel_server
    unanswered = Unanswered()
    with _claimed_stdin() as fd, _claimed_stdout() as out_fd:
        text = io.TextIOWrapper(os.fdopen(out_fd, "wb", closefd=False), encoding="utf-8")
        out = _AnsweringOut(anyio.wrap_file(text), unanswered)
        lines = RequestLines(fd, unanswered=unanswered)
        async with stdio_server(stdin=lines, stdout=out) as (read, write):  # type: ignore[arg-type]
            lines.answer_on(write)
            await lowlevel.run(read, write, lowlevel.create_initialization_options())
