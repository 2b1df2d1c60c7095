"""Embed a Gateway in a threaded HTTP server (each request runs on its own thread).

Run: python -m examples.threaded_server [DB]   (from a checkout; Ctrl-C stops it)
"""
import contextlib
import json
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from actors import Gateway
from actors.errors import InvalidArgument, SessionStateError

WATCHER = "agent:main:main"


def make_server(gw: Gateway, port: int = 0) -> ThreadingHTTPServer:
    """POST /watch/KEY, /human/KEY, /drain/WATCHER on 127.0.0.1:PORT; JSON answers.

    KEY is percent-decoded (agent%3Amain%3Aw is agent:main:w); a query string
    is ignored. An unknown route is 404, a bad key 400, an unavailable gateway 503.
    """
    routes: dict[str, Callable[[str], object]] = {
        "watch": lambda key: gw.watch(WATCHER, key),
        "human": lambda key: gw.human_message(key, channel="http") is not None,
        "drain": gw.drain,
    }

    class Handler(BaseHTTPRequestHandler):
        """One request, on its own thread (ThreadingHTTPServer); blocks on the gateway."""

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

        def answer(self, status: int, body: object) -> None:
            """Send ``body`` as JSON with ``status``."""
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep request lines out of the logs

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


if __name__ == "__main__":
    with (Gateway.open(sys.argv[1] if len(sys.argv) > 1 else None) as gw,
          make_server(gw, 8765) as server, contextlib.suppress(KeyboardInterrupt)):
        sys.stderr.write(f"serving on http://127.0.0.1:8765, database {gw.location}\n")
        server.serve_forever()  # Ctrl-C stops it; the gateway closes cleanly
