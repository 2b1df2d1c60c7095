"""The fake model server's HTTP side: threads, recording, the scripted queue.

One :class:`FakeModelServer` listens on ``127.0.0.1`` at a random port and
delegates the wire format to an :class:`Api` (Anthropic Messages, OpenAI
Responses, OpenAI Chat Completions). Every request is recorded as a
:class:`ModelRequest`, in arrival order, before it is answered.

Request kinds (``ModelRequest.kind``), decided by the :class:`Api`:

* ``main``: a turn of an agent's conversation (the top-level agent's or a
  sub-agent's). The rule: a generation request that offers the model tools.
  Only these take the next scripted answer (:meth:`FakeModelServer.script`);
  with the queue empty they get :data:`DEFAULT_TEXT`, marked ``scripted=False``.
* ``side``: a generation request without tools: titles, summaries, topic or
  quota checks. It never takes a scripted answer; it gets the API's side
  answer (a short title-like text), and ``purpose`` says what it looked like.
* ``count_tokens``, ``models`` and ``other``: bookkeeping endpoints, answered
  with a plausible fixed body (or 404 for ``other``).

The rule is structural, not textual, so a tool's changed prompt wording does
not move a request between kinds; ``purpose`` is only a description.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import urlsplit

from tests.harness.script import Answer, Fail, Text, ToolUse

__all__ = ["DEFAULT_TEXT", "NO_RETRY", "Api", "FakeModelServer", "ModelRequest", "Reply"]

log = logging.getLogger(__name__)

DEFAULT_TEXT = "OK."
"""The answer of a main request that found the script empty."""

MAIN_KINDS = frozenset({"main"})

NO_RETRY = {"x-should-retry": "false"}
"""Headers of a scripted failure: the Stainless-generated SDKs (Anthropic's, OpenAI's)
retry unless the server says not to."""


@dataclass
class ModelRequest:
    """One recorded request.

    Attributes:
        index: 0-based arrival order at this server (all kinds).
        method, path, query: the HTTP request line (path without the query).
        headers: the request headers (lower-case names).
        body: the parsed JSON body, or ``None``.
        kind: ``main``, ``side``, ``count_tokens``, ``models`` or ``other``.
        purpose: a description of a side request (``title``, ``summary``...).
        answer: the answer it got (scripted or default), for generation requests.
        scripted: whether ``answer`` came from the script.
        done: set once the response was written completely (or failed).
    """

    index: int
    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: Any
    kind: str = "other"
    purpose: str = ""
    answer: Answer | None = None
    scripted: bool = False
    texts: tuple[str, ...] = ()
    tool_names: tuple[str, ...] = ()
    done: threading.Event = field(default_factory=threading.Event, repr=False)

    def text(self) -> str:
        """Every text the request carries (system, messages, tool results), newline-joined."""
        return "\n".join(self.texts)

    def has_text(self, needle: str) -> bool:
        """Whether ``needle`` occurs in :meth:`text`."""
        return needle in self.text()


@dataclass(frozen=True)
class Reply:
    """What an :class:`Api` writes back: status, headers and body chunks.

    ``chunks`` is iterated lazily; ``pause`` (seconds) is waited before each
    chunk after the first (a server stop cuts the wait short). ``headers`` are
    extra response headers.
    """

    status: int
    content_type: str
    chunks: Iterable[bytes]
    pause: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


class Api(Protocol):
    """One API shape: classifies requests and renders answers in its wire format."""

    name: str

    def classify(self, method: str, path: str, body: Any) -> tuple[str, str]:
        """``(kind, purpose)`` of a request (see the module docstring)."""
        ...

    def texts(self, body: Any) -> tuple[str, ...]:
        """Every text of a generation request's context, in order."""
        ...

    def tool_names(self, body: Any) -> tuple[str, ...]:
        """The names of the tools a generation request offers."""
        ...

    def render(self, answer: Answer, body: Any) -> Reply:
        """The reply for a generation request (streaming when the body asks for it)."""
        ...

    def fixed(self, kind: str, path: str, body: Any) -> Reply:
        """The reply for a bookkeeping request (``count_tokens``, ``models``, ``other``)."""
        ...


class FakeModelServer:
    """A fake model API on ``127.0.0.1`` with a scripted answer queue.

    Start it with :meth:`start` (or as a context manager), give tools
    :attr:`base_url`, queue answers with :meth:`script`, and read what the
    tools sent through :attr:`requests`, :meth:`main_requests` and
    :meth:`wait_main`. Each request runs in its own daemon thread; every
    public method is thread-safe and only :meth:`wait_main` / :meth:`wait`
    block (each with its own timeout).
    """

    def __init__(self, api: Api, *, default: Answer | None = None) -> None:
        """``api`` renders the wire format; ``default`` answers a main request the
        script has nothing for (default: ``Text(DEFAULT_TEXT)``)."""
        self.api = api
        self.default: Answer = default if default is not None else Text(DEFAULT_TEXT)
        self._queue: deque[Answer] = deque()
        self._requests: list[ModelRequest] = []
        self._problems: list[str] = []
        self._disconnects: list[int] = []
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeModelServer:
        """Bind ``127.0.0.1:0`` and serve in a daemon thread; returns ``self``.

        Raises:
            RuntimeError: already started.
        """
        if self._httpd is not None:
            raise RuntimeError("the fake model server is already running")
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._httpd.daemon_threads = False  # server_close() joins every request thread
        self._httpd.block_on_close = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name=f"fake-{self.api.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: cut short every delay, close every open connection, and join
        the server thread and every request thread (blocks briefly)."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            with self._changed:
                open_now = list(self._connections)
            for conn in open_now:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5.0)
        with self._changed:
            self._changed.notify_all()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port it listens on. Raises ``RuntimeError`` before :meth:`start`."""
        if self._httpd is None:
            raise RuntimeError("the fake model server is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (no path; tools add ``/v1`` as their config wants)."""
        return f"http://127.0.0.1:{self.port}"

    # -- script ------------------------------------------------------------------------------

    def script(self, *answers: Answer) -> None:
        """Append answers to the queue main requests take from, in order."""
        with self._changed:
            self._queue.extend(answers)

    @property
    def pending(self) -> int:
        """How many scripted answers no main request has taken yet."""
        with self._changed:
            return len(self._queue)

    # -- records -----------------------------------------------------------------------------

    @property
    def requests(self) -> list[ModelRequest]:
        """A copy of every request so far, in arrival order."""
        with self._changed:
            return list(self._requests)

    def main_requests(self) -> list[ModelRequest]:
        """The main-conversation requests so far, in arrival order."""
        return [r for r in self.requests if r.kind in MAIN_KINDS]

    @property
    def problems(self) -> list[str]:
        """What went wrong while serving (bad JSON, unknown tool names)."""
        with self._changed:
            return list(self._problems)

    @property
    def disconnects(self) -> list[int]:
        """Indexes of the requests whose client went away before the answer was written
        (an interrupted turn)."""
        with self._changed:
            return list(self._disconnects)

    def wait(self, predicate: Callable[[list[ModelRequest]], bool], timeout_s: float,
             what: str = "a request") -> list[ModelRequest]:
        """Block until ``predicate(requests)`` holds; returns the requests then.

        Raises:
            TimeoutError: not within ``timeout_s`` seconds (the message lists the
                request kinds seen so far).
        """
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(self._requests) or self._stop.is_set(),
                                          timeout_s) or not predicate(self._requests):
                seen = ", ".join(f"{r.kind}:{r.purpose or r.path}" for r in self._requests)
                raise TimeoutError(f"{self.api} server: no {what} within {timeout_s:.0f} s "
                                   f"(seen: {seen or 'nothing'})")
            return list(self._requests)

    def wait_main(self, n: int, timeout_s: float = 30.0, *, answered: bool = True
                  ) -> ModelRequest:
        """Block until the ``n``-th (1-based) main request arrived; return it.

        With ``answered`` (default) also wait until its response was written.

        Raises:
            TimeoutError: not within ``timeout_s`` seconds.
        """
        def nth(reqs: list[ModelRequest]) -> bool:
            mains = [r for r in reqs if r.kind in MAIN_KINDS]
            return len(mains) >= n and (not answered or mains[n - 1].done.is_set())

        found = self.wait(nth, timeout_s, f"main request #{n}")
        return [r for r in found if r.kind in MAIN_KINDS][n - 1]

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # -- serving (request threads) -----------------------------------------------------------

    def _record(self, method: str, target: str, headers: Mapping[str, str], raw: bytes
                ) -> ModelRequest:
        parts = urlsplit(target)
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                self._problem(f"{method} {parts.path}: body is not JSON")
        kind, purpose = self.api.classify(method, parts.path, body)
        with self._changed:
            req = ModelRequest(index=len(self._requests), method=method, path=parts.path,
                               query=parts.query, headers=headers, body=body, kind=kind,
                               purpose=purpose)
            if kind in ("main", "side"):
                req.texts = self.api.texts(body)
                req.tool_names = self.api.tool_names(body)
            if kind == "main":
                req.scripted = bool(self._queue)
                req.answer = self._queue.popleft() if self._queue else self.default
                if isinstance(req.answer, ToolUse) and req.answer.name not in req.tool_names:
                    self._problems.append(f"main request #{req.index}: scripted tool "
                                          f"{req.answer.name!r} is not among the offered "
                                          f"tools {sorted(req.tool_names)}")
                    req.answer = Fail(400, f"harness: no tool named {req.answer.name!r}")
            self._requests.append(req)
            self._changed.notify_all()
        return req

    def _problem(self, text: str) -> None:
        log.warning("fake %s server: %s", self.api.name, text)
        with self._changed:
            self._problems.append(text)

    def _reply_for(self, req: ModelRequest) -> tuple[Reply, float]:
        if req.kind == "main" and req.answer is not None:
            return self.api.render(req.answer, req.body), req.answer.delay_s
        if req.kind == "side":
            return self.api.render(Text(side_text(req.purpose)), req.body), 0.0
        return self.api.fixed(req.kind, req.path, req.body), 0.0

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds`` unless the server stops first; ``True`` when it did not."""
        return seconds <= 0 or not self._stop.wait(seconds)


def side_text(purpose: str) -> str:
    """What a side request gets: a title for a title request, else a short summary."""
    return "Harness session" if purpose == "title" else "Summary: the harness ran a test."


def _handler_class(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 60  # an idle keep-alive connection ends after a minute

        def setup(self) -> None:
            super().setup()
            with server._changed:
                server._connections.add(self.connection)

        def finish(self) -> None:
            with server._changed:
                server._connections.discard(self.connection)
            super().finish()

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("fake %s: " + format, server.api.name, *args)

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_HEAD(self) -> None:
            self._serve()

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            req = server._record(self.command, self.path, headers, raw)
            try:
                reply, delay = server._reply_for(req)
                if not server._pause(delay):
                    return
                self._write(reply)
            except (BrokenPipeError, ConnectionResetError):
                with server._changed:
                    server._disconnects.append(req.index)
            finally:
                req.done.set()
                server._notify()

        def _write(self, reply: Reply) -> None:
            streaming = reply.content_type.startswith("text/event-stream")
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if streaming:
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                first = True
                for chunk in reply.chunks:
                    if not first and not server._pause(reply.pause):
                        break
                    first = False
                    self.wfile.write(chunk)
                    self.wfile.flush()
                self.close_connection = True
                return
            data = b"".join(reply.chunks)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

    return Handler
