"""Embed a Gateway in a threaded HTTP server (each request runs on its own thread).

Run: python -m examples.threaded_server [DB] [PORT]   (from a checkout; default port
8765; Ctrl-C stops it)
"""
import contextlib
import io
import json
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from actors import Gateway
from actors.errors import InvalidArgument, SessionStateError

WATCHER = "agent:main:main"
REQUEST_TIMEOUT_S = 10.0  # a client that sends half a request is cut off after this
BACKLOG = 128  # connections the kernel queues while every thread is busy


class Stalled(Exception):
    """The client did not send its whole request in time."""


class StallReader(io.BufferedIOBase):
    """The request stream: a read that times out raises Stalled, which http.server
    does not catch (its TimeoutError closes the connection without a word)."""

    def __init__(self, raw: io.BufferedIOBase) -> None:
        super().__init__()
        self.raw = raw

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.raw.close()
        super().close()

    def readline(self, size: int | None = -1, /) -> bytes:
        try:
            return self.raw.readline(size)
        except TimeoutError as exc:
            raise Stalled from exc

    def read(self, size: int | None = -1, /) -> bytes:
        try:
            return self.raw.read(size)
        except TimeoutError as exc:
            raise Stalled from exc


def make_server(gw: Gateway, port: int = 0, *,
                timeout: float = REQUEST_TIMEOUT_S) -> ThreadingHTTPServer:
    """POST /watch/KEY, /human/KEY, /drain/WATCHER on 127.0.0.1:PORT; JSON answers.

    KEY is percent-decoded (agent%3Amain%3Aw is agent:main:w); a query string
    is ignored. An unknown route is 404, a bad key 400, an unavailable gateway 503,
    another method 405; a request line or header too long gets a JSON error too
    (never an HTML page), and a request not sent within ``timeout`` seconds a 408.
    """
    routes: dict[str, Callable[[str], object]] = {
        "watch": lambda key: gw.watch(WATCHER, key),
        "human": lambda key: gw.human_message(key, channel="http") is not None,
        "drain": gw.drain,
    }
    limit = timeout

    class Handler(BaseHTTPRequestHandler):
        """One request, on its own thread (ThreadingHTTPServer); blocks on the gateway."""

        timeout = limit  # the socket's timeout: a stalled client frees its thread

        def setup(self) -> None:
            super().setup()
            self.rfile = StallReader(self.rfile)

        def handle_one_request(self) -> None:
            """http.server's, but a request not sent within the timeout gets a 408."""
            try:
                super().handle_one_request()
            except Stalled:
                if not hasattr(self, "requestline"):  # stalled in the request line
                    self.requestline, self.command = "", ""
                    self.request_version = ""  # not HTTP/0.9: the answer has a status line
                self.close_connection = True
                self.answer(408, {"error": f"the request was not sent within {limit:g} s"})

        def do_POST(self) -> None:
            action, _, key = urlsplit(self.path).path.removeprefix("/").partition("/")
            if action not in routes:
                self.answer(404, {"error": f"no route POST /{action}"})
                return
            try:
                self.answer(200, routes[action](unquote(key, errors="strict")))
            except (InvalidArgument, UnicodeDecodeError) as exc:  # a bad key
                self.answer(400, {"error": str(exc)})
            except SessionStateError as exc:  # closed, or an actor did not answer
                self.answer(503, {"error": str(exc)})

        def do_GET(self) -> None:
            """Every route is a POST: anything else is 405."""
            self.answer(405, {"error": "every route is a POST"})

        do_PUT = do_DELETE = do_PATCH = do_GET  # noqa: N815 - http.server names them so

        def do_HEAD(self) -> None:
            """405 as for GET, with the headers only (a HEAD answer has no body)."""
            self.answer(405, {"error": "every route is a POST"}, body=False)

        def send_error(self, code: int, message: str | None = None,
                       explain: str | None = None) -> None:
            """http.server's own errors (414, 431, 400, 501...) as JSON, not HTML."""
            self.close_connection = True
            self.answer(code, {"error": message or self.responses.get(code, ("",))[0]},
                        body=self.command != "HEAD")

        def answer(self, status: int, payload: object, *, body: bool = True) -> None:
            """Send ``payload`` as JSON with ``status`` (headers only unless ``body``)."""
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep request lines out of the logs

    class Server(ThreadingHTTPServer):
        request_queue_size = BACKLOG
        daemon_threads = True  # a stuck request never holds up the exit

    return Server(("127.0.0.1", port), Handler)


if __name__ == "__main__":
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8765
    with (Gateway.open(sys.argv[1] if len(sys.argv) > 1 else None) as gw,
          make_server(gw, port) as server, contextlib.suppress(KeyboardInterrupt)):
        sys.stderr.write(f"serving on http://127.0.0.1:{server.server_address[1]}, "
                         f"database {gw.location}\n")
        server.serve_forever()  # Ctrl-C stops it; the gateway closes cleanly
