"""``ssa mcp``: a stdio MCP server whose tools mirror the gateway, with the seed's names.

Tools (arguments in camelCase, as the notice text names them):

* ``session_status(sessionKey, changesSince?, limit?)``: the state version and,
  with ``changesSince``, at most ``limit`` (default 20, at most 50) of the events after
  it; ``nextChangesSince`` says where to continue when more remain.
* ``sessions_list(agentId?, cursor?, limit?)``: a page of sessions (default
  20, at most 50); ``nextCursor`` fetches the next page.
* ``sessions_send(targetKey, text, watch?, senderKey?)``: delivers the text
  into the target's running session through its tool's push path
  (:mod:`actors.agents.send`); the result keeps the seed's ``accepted`` and
  ``watched`` and adds ``delivery`` (``delivered``, ``queued``, ``refused``,
  ``no_live_session``); with ``watch`` the sender watches the target.
* ``pending_notices(watcherKey?)``: the watcher's queued notices, not consumed.
* ``drain(watcherKey?)``: consumes them and acknowledges the notices.
* ``manage(on?, wake?)``: makes the calling session a manager (``on=false``: a
  worker again), as ``ssa manage`` does.

Where a tool takes the caller's own key (``senderKey``, ``watcherKey``) it is
optional: the server works it out from the session its tool process runs
(:mod:`actors.agents.caller`, the record the session's prompt hook keeps).

Requests are read by :mod:`actors.agents.mcp_stdio`: a line longer than
:data:`~actors.agents.mcp_stdio.MAX_REQUEST_BYTES`, one that is no JSON or
holds a lone surrogate escape gets a JSON-RPC error answer. The answers are
:mod:`actors.agents.mcp_rpc`'s (MCP's ``initialize``, ``ping``,
``tools/list``, ``tools/call``); the tools are :mod:`actors.agents.mcp_tools`'.
The MCP SDK is not imported to serve (its import alone took 0.8 s before the
first answer, issue 33); the tests keep it as the oracle of the tool schemas
and drive the server with its client.

Results are JSON text (and structured content), kept small: pages, and a
watcher's queue holds at most ``GatewayConfig.queue_limit`` (20) entries. A
bad argument comes back as a tool error with the gateway's message.

The server opens one :class:`~actors.Gateway` (``monitor=False``: it never
scans by itself) on the first tool call, on ``--db``, else ``$SSA_DB``, else
the default file, and closes it when the server stops (stdin closed,
SIGTERM, SIGINT: after answering the requests already read or running,
:mod:`actors.agents.mcp_stdio`). Tool functions are plain functions run on
worker threads, so ``ping`` is answered while a tool blocks.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO

from actors.agents.mcp_rpc import McpServer
from actors.agents.mcp_stop import SignalStop
from actors.agents.mcp_tools import DEFAULT_PAGE, MAX_PAGE, GatewayHolder, tool_functions

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "GatewayHolder", "build_server", "main"]


def build_server(holder: GatewayHolder) -> McpServer:
    """The MCP server of the six tools on ``holder``'s gateway (pure: nothing opened yet)."""
    return McpServer(tool_functions(holder))


def main(db: str | None, *, err: TextIO) -> int:
    """Serve MCP on stdin/stdout until stdin closes or SIGTERM/SIGINT; returns the exit code.

    Blocks the calling (main) thread. 0 when stdin ended (after answering
    what was asked, within :data:`~actors.agents.mcp_stdio.ANSWER_GRACE_S`);
    1 with one line on ``err`` when stdin or stdout cannot be used. On
    SIGTERM or SIGINT no request is run any more, the calls already running
    are answered (within :data:`~actors.agents.mcp_stdio.STOP_GRACE_S`), the
    gateway is closed and the process exits with 128 + the signal's number
    (``os._exit``: a tool may still be blocked on a worker thread that nothing
    can interrupt, and it does not return). A second signal meanwhile exits
    at once (:class:`~actors.agents.mcp_stop.SignalStop`).
    """
    location = db if db is not None else (os.environ.get("SSA_DB") or None)
    if location is not None and "://" not in location:
        # MCP arguments reach no shell: expand ~ as the hooks' shell does, so both name
        # the same database (not a literal ./~/ folder).
        location = os.path.expanduser(location)
    holder = GatewayHolder(location)
    server = build_server(holder)
    stop = SignalStop()
    code = 0
    try:
        with stop.installed():  # also while the gateway closes: a second signal ends it
            try:
                from actors.agents.mcp_stdio import run  # noqa: PLC0415 - only when serving

                run(server, stop=stop)
            except OSError as exc:  # e.g. no stdin at all: one line, as the others say it
                err.write(f"ssa: {exc}\n")
                code = 1
            finally:
                holder.close()
            stop.take()  # a signal while the gateway closed: its exit code
    finally:
        stop.close()
    if stop.signum is not None:  # the answers are written (os.write: nothing buffered)
        for stream in (err, sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(128 + stop.signum)
    return code
