"""Embed a Gateway in a threaded HTTP server (each request runs on its own thread)."""
import contextlib
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from actors import Gateway


def make_server(gw: Gateway, port: int = 0) -> ThreadingHTTPServer:
    """POST /watch/<key>, /human/<key>, /drain/<watcher> on 127.0.0.1:<port>."""
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            try:
                _, action, key = self.path.split("/", 2)
                if action == "watch":
                    body: object = gw.watch("agent:main:main", key)
                elif action == "human":
                    body = gw.human_message(key, channel="http") is not None
                else:
                    body = gw.drain(key)
            except ValueError as exc:  # a bad key (actors.errors) or a malformed path
                self.send_error(400, str(exc))
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep request lines out of the logs

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


if __name__ == "__main__":
    with (Gateway.open(sys.argv[1] if len(sys.argv) > 1 else None) as gw,
          make_server(gw, 8765) as server, contextlib.suppress(KeyboardInterrupt)):
        server.serve_forever()  # Ctrl-C stops it; the gateway closes cleanly
