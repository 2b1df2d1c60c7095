"""``ssa mcp``'s stdio transport: newline-delimited JSON-RPC, every request answered.

Each line is read with a bound (:data:`MAX_REQUEST_BYTES`; the rest of a
longer one is skipped in small chunks, never held) and checked
(:func:`parse_request`): a line that is no JSON, holds a lone surrogate
escape (JSON ``"\\ud800"``, which is no Unicode text) or is no JSON-RPC
message gets a JSON-RPC error answer, with the request's id when it can be
found (``-32700`` for a line that is no JSON, ``-32600`` for the rest).
Lines that pass go to :class:`actors.agents.mcp_rpc.McpServer`: a tool call
runs on a worker thread of its own (at most :data:`MAX_CALLS` at a time),
the rest are answered on the reading thread, so ``ping`` is answered while
a tool runs.

History: this module used to guard the MCP SDK's transport, which read a
whole line however long (40 sends of 4 MiB took the server from 77 to
160-258 MB) and dropped a line it could not parse without a word (the
client waited forever). The SDK is no longer imported to serve (it cost
0.8 s before the first answer); the guards stay.

When stdin ends, the server still waits (at most :data:`ANSWER_GRACE_S`)
for the requests read and not answered yet: a ``drain`` acknowledges as it
runs, and its answer must not be lost because the client closed stdin right
after asking. A stop (SIGTERM, SIGINT: :mod:`actors.agents.mcp_stop` writes their
numbers into a pipe) is the same but for what comes after it: no request is
run any more (each is answered with :data:`STOPPING`, and so is a tool call
read before the stop whose tool had not started yet), and the calls already
running are answered, at most :data:`STOP_GRACE_S`. So a ``drain`` is never
acknowledged without its answer being written, unless the process is
killed first. The requests are read on a thread of their own so that the
calling (main) thread only waits, for end of input or the stop. While
serving, fd 0 reads the null device and fd 1 writes to
stderr, so a child a tool starts never eats the requests and a stray print
never corrupts the protocol.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple, Protocol

__all__ = ["ANSWER_GRACE_S", "INTERNAL_ERROR", "INVALID_REQUEST", "MAX_CALLS",
           "MAX_REQUEST_BYTES", "PARSE_ERROR", "STOPPING", "STOP_GRACE_S", "Answers",
           "Refusal", "Unanswered", "parse_request", "read_line", "request_problem", "run",
           "serve"]

MAX_REQUEST_BYTES = 1024 * 1024
"""The longest request line read, in bytes (with its newline): sixty times the longest
text ``sessions_send`` takes, even with every character escaped as ``\\uXXXX``."""
_SKIP_BYTES = 64 * 1024
"""How much of an over-long line is read at a time while it is skipped."""
ANSWER_GRACE_S = 30.0
"""How long the server still runs after its input ended, for requests not answered yet."""
STOP_GRACE_S = ANSWER_GRACE_S
"""How long the server still runs after a stop signal, for the calls already running. The
same bound as at end of input: the server exits as soon as they are answered (a ``drain``
takes milliseconds, at most the database's 5 s lock wait), so the bound only matters for a
call that hangs; a client that will not wait kills the server (an MCP client sends SIGKILL
a few seconds after SIGTERM), and a second SIGTERM/SIGINT ends it at once."""
MAX_CALLS = 8
"""Tool calls running at once; the reading waits for a free one (a flood holds no threads)."""
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
STOPPING = -32000
"""The error of a request the server no longer runs because it stops (a JSON-RPC server error)."""

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

    def answer(self) -> dict[str, Any]:
        """The JSON-RPC error response (pure)."""
        return {"jsonrpc": "2.0", "id": self.request_id,
                "error": {"code": self.code, "message": self.message}}


def _id_of(value: object) -> int | str | None:
    """A JSON-RPC id (an int that is no bool, or a str), else ``None`` (pure)."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _shape_problem(message: Mapping[str, Any]) -> str | None:
    """What makes a decoded object no JSON-RPC 2.0 request, notification or response (pure)."""
    if message.get("jsonrpc") != "2.0":
        return "jsonrpc: Input should be '2.0'"
    if "id" in message and _id_of(message["id"]) is None:
        return "id: Input should be a valid integer or string"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method: Input should be a valid string"
        if "params" in message and not isinstance(message["params"], dict | None):
            return "params: Input should be a valid dictionary"
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None
    return "method: Field required"


def parse_request(line: str) -> dict[str, Any] | Refusal:
    """The JSON-RPC message of request ``line``, or the :class:`Refusal` to answer it with (pure).

    Blank lines are not passed here (the reader skips them).
    """
    try:
        parsed = json.loads(line)  # Python's JSON takes lone surrogates; checked below
    except ValueError:
        return Refusal(None, PARSE_ERROR, "the request is not JSON")
    if not isinstance(parsed, dict):
        return Refusal(None, INVALID_REQUEST,
                       "not a valid JSON-RPC request: a request is a JSON object")
    request_id = _id_of(parsed.get("id"))
    try:
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return Refusal(request_id, INVALID_REQUEST,
                       "the request holds a lone surrogate escape (\\ud800 to \\udfff alone), "
                       "which is no Unicode text")
    problem = _shape_problem(parsed)
    if problem is not None:
        return Refusal(request_id, INVALID_REQUEST, f"not a valid JSON-RPC request: {problem}")
    return parsed


def request_problem(line: str) -> Refusal | None:
    """Why request ``line`` is refused (:func:`parse_request`), or ``None`` (it is taken; pure)."""
    parsed = parse_request(line)
    return parsed if isinstance(parsed, Refusal) else None


def _id_in_prefix(prefix: bytes) -> int | str | None:
    """The id of an over-long request, from the members before its ``params`` (pure)."""
    found = _ID_FIRST.match(prefix)
    if found is None:
        return None
    try:
        return _id_of(json.loads(found.group(1)))
    except ValueError:
        return None


class _Readable(Protocol):
    def readline(self, size: int = -1, /) -> bytes: ...


def read_line(reader: _Readable, limit: int = MAX_REQUEST_BYTES) -> tuple[bytes | None, bool]:
    """``(line, whole)``: a line of at most ``limit`` bytes, or the start of a longer one
    whose rest was skipped (``whole`` false); ``(None, True)`` at end of input.

    Calling thread; blocks on ``reader`` (a binary file).
    """
    line = reader.readline(limit + 1)
    if not line:
        return None, True
    if line.endswith(b"\n") or len(line) <= limit:
        return line, True
    while (rest := reader.readline(_SKIP_BYTES)) and not rest.endswith(b"\n"):
        pass
    return line, False


class Unanswered:
    """The ids of the requests read and not answered yet (any thread).

    At the end of input the server waits (at most a grace) until these are
    answered (:meth:`settled`).
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._changed = threading.Condition()

    def asked(self, request_id: object) -> None:
        """Note a request read (its id)."""
        key = json.dumps(request_id)
        with self._changed:
            self._ids[key] = self._ids.get(key, 0) + 1

    def answered(self, request_id: object) -> None:
        """Note a response sent (its id); wakes :meth:`settled` when none is left."""
        key = json.dumps(request_id)
        with self._changed:
            left = self._ids.get(key, 0) - 1
            if left > 0:
                self._ids[key] = left
            else:
                self._ids.pop(key, None)
            if not self._ids:
                self._changed.notify_all()

    def settled(self, grace_s: float) -> bool:
        """Wait until every request read was answered, at most ``grace_s`` seconds
        (blocks the calling thread); whether all were."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._ids, timeout=grace_s)


class Answers:
    """Writes JSON-RPC messages to ``fd``, one line each, whole (any thread; blocks on the pipe).

    Args:
        fd: the descriptor (not closed here).
        unanswered: told of each response sent.
    """

    def __init__(self, fd: int, unanswered: Unanswered) -> None:
        self._fd = fd
        self._unanswered = unanswered
        self._lock = threading.Lock()

    def send(self, message: Mapping[str, Any]) -> None:
        """Write ``message`` and its newline; then note its id answered.

        Raises:
            OSError: the client's end is gone (``BrokenPipeError``).
        """
        try:
            data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:  # a lone surrogate in a result: escaped, still JSON
            data = json.dumps(message, separators=(",", ":")).encode()
        view = memoryview(data + b"\n")
        with self._lock:
            while view:
                view = view[os.write(self._fd, view):]
        if "result" in message or "error" in message:
            self._unanswered.answered(message.get("id"))


class _Server(Protocol):
    """What :func:`serve` needs of :class:`actors.agents.mcp_rpc.McpServer`."""

    def slow(self, message: Mapping[str, Any]) -> bool: ...

    def handle(self, message: Mapping[str, Any]) -> dict[str, Any] | None: ...


def _answer(server: _Server, message: Mapping[str, Any], answers: Answers) -> None:
    """Answer one message (its answer, or -32603 if the server failed: one answer always)."""
    try:
        reply = server.handle(message)
    except Exception as exc:  # a defect: the request is still answered
        reply = {"jsonrpc": "2.0", "id": message.get("id"),
                 "error": {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}}
        if "id" not in message:
            reply = None
    if reply is not None:
        _send(answers, reply)


def _refused_as_stopping(message: Mapping[str, Any]) -> dict[str, Any]:
    """The error answer to a request the server does not run because it stops (pure)."""
    return {"jsonrpc": "2.0", "id": message.get("id"),
            "error": {"code": STOPPING, "message": "the ssa MCP server is stopping: "
                                                   "the request was not run"}}


def _send(answers: Answers, message: Mapping[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the client went away: nobody to tell
        answers.send(message)


def _read_requests(server: _Server, reader: _Readable, answers: Answers,
                   unanswered: Unanswered, limit: int, stopping: Callable[[], bool]) -> None:
    """Read and answer (or start) request after request until end of input.

    Reading thread; blocks on ``reader`` and while :data:`MAX_CALLS` calls run.
    Once ``stopping()`` is true no request is run any more: each is answered
    with :data:`STOPPING`, and so is a tool call started on its thread but not
    yet handled (so nothing a tool would do goes unanswered).

    Raises:
        OSError: ``reader`` failed.
    """
    calls = threading.BoundedSemaphore(MAX_CALLS)

    def in_worker(message: Mapping[str, Any]) -> None:
        try:
            if stopping():  # the stop came after the call was read: not run
                _send(answers, _refused_as_stopping(message))
            else:
                _answer(server, message, answers)
        finally:
            calls.release()

    while True:
        line, whole = read_line(reader, limit)
        if line is None:
            return
        if not whole:
            refusal: Refusal | dict[str, Any] = Refusal(
                _id_in_prefix(line[:4096]), INVALID_REQUEST,
                f"the request is longer than {limit} bytes")
        else:
            text = line.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            refusal = parse_request(text)
        if isinstance(refusal, Refusal):
            unanswered.asked(refusal.request_id)  # its answer is counted: keep the tally
            _send(answers, refusal.answer())
            continue
        message = refusal
        request = "id" in message and isinstance(message.get("method"), str)
        if request:
            unanswered.asked(message["id"])
        if stopping():
            if request:
                _send(answers, _refused_as_stopping(message))
            continue
        if server.slow(message):
            calls.acquire()
            threading.Thread(target=in_worker, args=(message,), name="ssa-mcp-call",
                             daemon=True).start()
        else:
            _answer(server, message, answers)


class _Stop(Protocol):
    """What :func:`serve` needs of :class:`actors.agents.mcp_stop.SignalStop`."""

    @property
    def fd(self) -> int: ...

    @property
    def signum(self) -> int | None: ...

    def take(self) -> int | None: ...


def _closed_when_done(target: Callable[[], None], name: str) -> int:
    """Run ``target`` on a daemon thread of its own; the read end of a pipe whose other
    end closes when it returns (the caller closes the read end)."""
    done_read, done_write = os.pipe()

    def run_then_close() -> None:
        try:
            target()
        finally:
            os.close(done_write)

    threading.Thread(target=run_then_close, name=name, daemon=True).start()
    return done_read


def _wait(done_fd: int, stop: _Stop | None) -> None:
    """Block until ``done_fd`` turns readable (its writer closed it) or the first stop
    signal is taken (``stop.take``, which ends the process at a second one). Calling
    (main) thread; only ever blocks in ``poll``."""
    poller = select.poll()
    poller.register(done_fd, select.POLLIN)
    if stop is not None:
        poller.register(stop.fd, select.POLLIN)
    while True:
        ready = {fd for fd, _ in poller.poll()}
        if stop is not None and stop.fd in ready:
            first = stop.signum is None
            if stop.take() is not None and first:
                return
        if done_fd in ready:
            return


def serve(server: _Server, in_fd: int, out_fd: int, *, limit: int = MAX_REQUEST_BYTES,
          grace_s: float = ANSWER_GRACE_S, stop: _Stop | None = None,
          stop_grace_s: float = STOP_GRACE_S) -> bool:
    """Answer the requests of ``in_fd`` on ``out_fd`` until end of input or a stop, then
    wait (a grace) for the answers of the requests read.

    A thread of its own (``ssa-mcp-read``, a daemon) reads and answers all
    but tool calls, which run on daemon threads (at most :data:`MAX_CALLS`
    at once). The calling thread only waits, in ``poll``: until end of input
    or until ``stop`` (:class:`actors.agents.mcp_stop.SignalStop`) brings a
    stop signal, then until every request read was answered, at most
    ``grace_s`` after end of input and ``stop_grace_s`` after a stop. From
    the stop on, no request is run any more (each is answered with
    :data:`STOPPING`); a second stop signal ends the process at once
    (``stop.take``). The reading thread may still be blocked on ``in_fd``
    when this returns (it ends at end of input).

    Returns:
        whether every request read was answered.

    Raises:
        OSError: reading ``in_fd`` failed (before a stop).
    """
    reader = os.fdopen(in_fd, "rb", closefd=False)
    unanswered = Unanswered()
    answers = Answers(out_fd, unanswered)
    failure: list[OSError] = []

    def stopping() -> bool:  # any thread: set by the main one, read without a lock
        return stop is not None and stop.signum is not None

    def read_all() -> None:
        try:
            _read_requests(server, reader, answers, unanswered, limit, stopping)
        except OSError as exc:
            failure.append(exc)

    read_done = _closed_when_done(read_all, "ssa-mcp-read")
    try:
        _wait(read_done, stop)
    finally:
        os.close(read_done)
    if failure and not stopping():
        raise failure[0]
    grace = stop_grace_s if stopping() else grace_s
    settled: list[bool] = []
    settle_done = _closed_when_done(lambda: settled.append(unanswered.settled(grace)),
                                    "ssa-mcp-grace")
    try:
        while not settled:  # a first stop signal in the grace of end of input only
            _wait(settle_done, stop)  # refuses what has not started yet
    finally:
        os.close(settle_done)
    return settled[0]


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[int]:
    """A private duplicate of fd 0 while fd 0 reads the null device (as the MCP SDK did):
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
        os.dup2(private, 0)  # private stays open, as fd 1's (the process ends soon)


@contextlib.contextmanager
def _claimed_stdout() -> Iterator[int]:
    """A private duplicate of fd 1 while fd 1 writes to stderr (as the MCP SDK did): a stray
    print of a handler or a child never corrupts the protocol. fd 1 is restored after."""
    sys.stdout.flush()
    private = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(2, 1)
    try:
        yield private
    finally:
        os.dup2(private, 1)  # private stays open: a tool still running after the grace
        # may write its answer; a closed number could be reused by the database file


def run(server: _Server, *, stop: _Stop | None = None) -> bool:
    """Serve ``server`` (an :class:`~actors.agents.mcp_rpc.McpServer`) over stdin/stdout.

    Claims fds 0 and 1 while serving (see the module's text). Calling thread;
    blocks until end of input or a stop signal (``stop``), and the grace
    (:func:`serve`); returns whether every request read was answered.

    Raises:
        OSError: stdin or stdout cannot be used.
    """
    with _claimed_stdin() as in_fd, _claimed_stdout() as out_fd:
        return serve(server, in_fd, out_fd, stop=stop)
