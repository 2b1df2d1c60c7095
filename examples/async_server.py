"""Embed an AsyncGateway in an asyncio HTTP service (stdlib ``asyncio`` streams only).

Run it: ``python -m examples.async_server [DB] [PORT]`` (default port 8766), then::

    curl -X POST localhost:8766/watch/agent:main:subagent:w1       # the manager watches w1
    curl -X POST localhost:8766/human/agent:main:subagent:w1       # a person typed into w1
    curl localhost:8766/wait/agent:main:main?timeout=5             # a notice is queued
    curl -X POST localhost:8766/drain/agent:main:main              # ... and here it is
    curl 'localhost:8766/status/agent:main:subagent:w1?since=0'    # reconcile

Routes (keys are URL-decoded; anything else is 404, a bad key or query 400):

* ``POST /watch/<target>``: ``agent:main:main`` watches ``<target>``.
* ``POST /human/<key>``: record a ``human_message`` on ``<key>``.
* ``POST /drain/<watcher>``: drain the watcher's notices (a JSON list).
* ``GET /status/<key>?since=N``: ``session_status`` with ``changesSince``.
* ``GET /wait/<watcher>?timeout=S``: wait (at most ``S`` s, default 10) until the
  watcher has a notice; the coroutine ``on_wake`` sets the event it waits on, and
  a copy of this service on the same file (another process) that does not host
  the watcher finds the notice within ``WAIT_POLL_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sys
from collections import defaultdict
from urllib.parse import parse_qs, unquote, urlsplit

import msgspec

from actors import AsyncGateway
from actors.errors import GatewayClosed, GatewayUnavailable, SessionStateError

MANAGER = "agent:main:main"
MAX_HEADER_BYTES = 16_384
WAIT_LIMIT_S = 60.0
WAIT_POLL_S = 0.5
"""How often a long poll looks at the durable notices (another process may have them)."""


class BadQuery(ValueError):
    """A query parameter that is not what its route takes (a 400 with this message)."""


def _whole(query: dict[str, list[str]], name: str) -> int | None:
    """``?name=N``: a whole number >= 0, or ``None`` when absent (``BadQuery`` otherwise)."""
    if name not in query:
        return None
    text = query[name][0]
    if not (text.isascii() and text.isdigit()):
        raise BadQuery(f"{name} must be a whole number >= 0 (a stateVersion), not {text!r}")
    return int(text)


def _seconds(query: dict[str, list[str]], name: str, default: float) -> float:
    """``?name=S``: seconds >= 0, at most ``WAIT_LIMIT_S`` (``default`` when absent)."""
    text = query.get(name, [str(default)])[0]
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not seconds >= 0:  # also NaN
        raise BadQuery(f"{name} must be a number of seconds >= 0, not {text!r}")
    return min(seconds, WAIT_LIMIT_S)


class Service:
    """The HTTP routes over one :class:`AsyncGateway` (all on the event loop)."""

    def __init__(self) -> None:
        self.gateway: AsyncGateway | None = None
        self._woken: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)

    async def on_wake(self, watcher_key: str) -> None:
        """The gateway's ``on_wake``: a notice is queued for ``watcher_key``."""
        self._woken[watcher_key].set()

    async def route(self, method: str, target: str) -> tuple[int, object]:
        """``(status, JSON body)`` for one request."""
        assert self.gateway is not None
        gw = self.gateway
        url = urlsplit(target)
        parts = url.path.split("/", 2)
        if len(parts) != 3 or not parts[2]:
            return 404, {"error": "no such route"}
        action, key = parts[1], unquote(parts[2], errors="strict")  # bad escapes: 400
        query = parse_qs(url.query)
        match method, action:
            case "POST", "watch":
                return 200, await gw.watch(MANAGER, key)
            case "POST", "human":
                return 200, await gw.human_message(key, channel="http") is not None
            case "POST", "drain":
                self._woken[key].clear()
                return 200, await gw.drain(key)
            case "GET", "status":
                since = _whole(query, "since")
                status = await gw.session_status(key, changes_since=since)
                return 200, msgspec.to_builtins(status)
            case "GET", "wait":
                timeout = _seconds(query, "timeout", 10.0)
                return 200, await self._wait(gw, key, timeout)
        return 404, {"error": "no such route"}

    async def _wait(self, gw: AsyncGateway, key: str, timeout: float) -> bool:
        """Whether ``key`` has a notice within ``timeout`` s.

        The wake comes at once when this process hosts the watcher (its lease);
        a copy of this service that does not hold it sees the durable notice
        at its next look, every ``WAIT_POLL_S``.
        """
        deadline = asyncio.get_running_loop().time() + timeout
        while not await gw.pending_notices(key):
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken[key].wait(), min(left, WAIT_POLL_S))
        return True

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection: one request, one response (``Connection: close``)."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > MAX_HEADER_BYTES:
                raise ValueError("headers too large")
            method, target, _version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            try:
                status, body = await self.route(method, target)
            except (GatewayClosed, GatewayUnavailable) as exc:  # the gateway, not the request
                status, body = 503, {"error": str(exc)}
            except UnicodeDecodeError:
                status, body = 400, {"error": "the key is not UTF-8 after URL decoding"}
            except (SessionStateError, ValueError) as exc:  # a bad key or argument
                status, body = 400, {"error": str(exc)}
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            status, body = 400, {"error": "malformed request"}
        data = json.dumps(body).encode()
        writer.write(f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     "Connection: close\r\n\r\n".encode() + data)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def serve(db: str | None, port: int, started: asyncio.Future[int] | None = None,
                stop: asyncio.Event | None = None) -> None:
    """Serve on 127.0.0.1:``port`` until ``stop`` is set (or forever).

    ``started`` receives the bound port (``port`` 0 picks a free one).
    """
    service = Service()
    # hosts=: this process runs MANAGER's loop, so wakes caused in other processes
    # (another copy of this service on the same file) come here too.
    async with await AsyncGateway.open(db, on_wake=service.on_wake, hosts=(MANAGER,)) as gw:
        service.gateway = gw
        server = await asyncio.start_server(service.handle, "127.0.0.1", port,
                                            limit=MAX_HEADER_BYTES)
        async with server:
            bound = server.sockets[0].getsockname()[1]
            if started is not None:
                started.set_result(bound)
            else:
                print(f"serving on http://127.0.0.1:{bound} (Ctrl-C stops it)", flush=True)
            await (stop.wait() if stop is not None else asyncio.Event().wait())


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: the gateway closes cleanly
        asyncio.run(serve(sys.argv[1] if len(sys.argv) > 1 else None,
                          int(sys.argv[2]) if len(sys.argv) > 2 else 8766))
