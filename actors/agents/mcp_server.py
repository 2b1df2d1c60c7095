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
:data:`~actors.agents.mcp_stdio.MAX_REQUEST_BYTES`, or one the SDK would drop
unanswered (no JSON, a lone surrogate escape), gets a JSON-RPC error answer.

Results are JSON text (and structured content), kept small: pages, and a
watcher's queue holds at most ``GatewayConfig.queue_limit`` (20) entries. A
bad argument comes back as a tool error with the gateway's message.

The server opens one :class:`~actors.Gateway` (``monitor=False``: it never
scans by itself) on the first tool call, on ``--db``, else ``$SSA_DB``, else
the default file, and closes it when the server stops (stdin closed,
SIGTERM, SIGINT). Tool handlers are plain functions: the SDK runs each on a
worker thread, so the gateway's blocking calls never hold the event loop.
Needs the ``mcp`` extra (the official MCP Python SDK 2.x).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any, TextIO

import msgspec

from actors.agents.manage import resolve_self, set_role, state_dir_of
from actors.agents.send import send
from actors.errors import SessionStateError
from persistence.errors import BackendNotInstalled, StorageError
from persistence.keys import agent_id_of
from persistence.locations import default_state_path

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "GatewayHolder", "build_server", "main"]

DEFAULT_PAGE = 20
"""Rows or events per result unless ``limit`` says otherwise."""
MAX_PAGE = 50
"""The largest ``limit`` accepted: a result is sent twice (text and structured
content), and 50 events of about 250 characters each keep it near 6,000 tokens,
under Claude Code's 10,000-token warning (measured: 200 events made 137 KB)."""

INSTRUCTIONS = (
    "Session state awareness: when a notice says 'Session \"K\" changed (other actor). "
    "Reconcile before acting: session_status sessionKey \"K\" changesSince N', call "
    "session_status with sessionKey K and changesSince N to see what changed (kinds, actors, "
    "times; never message text). drain(watcherKey) consumes and acknowledges your notices.")


def _caller(holder: GatewayHolder, given: str | None,
            option: str = "the watcherKey argument") -> str:
    """``given``, else the key of the session whose tool process runs this server.

    Raises:
        SessionStateError: not found (the message says how to name it: ``option``).
    """
    return resolve_self(holder.location or default_state_path(), given, option=option)


class GatewayHolder:
    """Opens the gateway on first use (from any worker thread) and closes it once.

    Args:
        location: a SQLite path or ``postgresql://`` URL; ``None``: the default file.
        opener: ``(location) -> Gateway`` (tests inject one); default ``Gateway.open``
            with ``monitor=False``.
    """

    def __init__(self, location: str | None, opener: Any = None) -> None:
        self.location = location
        """The signal log named on the command line or by ``$SSA_DB`` (``None``: default)."""
        self._location = location
        self._opener = opener
        self._lock = threading.Lock()
        self._gateway: Any = None
        self._closed = False

    def get(self) -> Any:
        """The open gateway (opened now if needed; blocks on disk the first time).

        Raises:
            SessionStateError: the server is stopping, or the database cannot be opened.
        """
        with self._lock:
            if self._closed:
                raise SessionStateError("the ssa MCP server is stopping")
            if self._gateway is None:
                if self._opener is not None:
                    self._gateway = self._opener(self._location)
                else:
                    from actors import Gateway  # noqa: PLC0415

                    self._gateway = Gateway.open(self._location, monitor=False)
            return self._gateway

    def close(self) -> None:
        """Close the gateway if it was opened (idempotent; any thread; blocks up to ~10 s)."""
        with self._lock:
            self._closed = True
            gateway, self._gateway = self._gateway, None
        if gateway is not None:
            gateway.close()


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _page_limit(limit: int | None) -> int:
    if limit is None:
        return DEFAULT_PAGE
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be from 1 to {MAX_PAGE}")
    return limit


def _cursor_offset(cursor: str | None) -> int:
    """The row offset a ``sessions_list`` cursor stands for (``ValueError`` when it is not one)."""
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise ValueError("cursor must be the nextCursor of an earlier sessions_list")
    return int(cursor)


def _names(gw: Any, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The sessions' names in their tools (:mod:`actors.agents.linkname`), read now;
    ``{}`` when the links cannot be read (a name is a courtesy)."""
    from actors.agents.linkname import session_names  # noqa: PLC0415 - only when a tool runs

    try:
        return session_names(gw, pairs)
    except StorageError:
        return {}


def build_server(holder: GatewayHolder) -> Any:
    """The :class:`mcp.server.mcpserver.MCPServer` with the six tools, on ``holder``'s gateway.

    Raises:
        ImportError: the ``mcp`` package is not installed.
    """
    from mcp.server.mcpserver import MCPServer  # noqa: PLC0415
    from mcp.server.mcpserver.exceptions import ToolError  # noqa: PLC0415

    server = MCPServer("ssa", instructions=INSTRUCTIONS)

    def call(fn: Any) -> Any:
        try:
            return fn(holder.get())
        except (SessionStateError, StorageError, BackendNotInstalled, OSError, ValueError,
                TypeError) as exc:  # a bad key, a database that cannot be opened, ...
            raise ToolError(str(exc)) from None

    @server.tool(description="A session's state version; with changesSince, the typed "
                 "changes after that version (a page of at most `limit` events; "
                 "nextChangesSince continues). Never consumes anything.")
    def session_status(sessionKey: str, changesSince: int | None = None,  # noqa: N803
                       agentId: str | None = None,  # noqa: N803
                       limit: int | None = None) -> dict[str, Any]:
        def run(gw: Any) -> dict[str, Any]:
            page = _page_limit(limit)
            status = _plain(gw.session_status(sessionKey, changes_since=changesSince,
                                              agent_id=agentId))
            changes = status.get("stateChanges")
            if changes is not None and len(changes["events"]) > page:
                changes["events"] = changes["events"][:page]
                changes["truncated"] = True
                status["nextChangesSince"] = changes["events"][-1]["sequence"]
            pair = (sessionKey, agentId or agent_id_of(sessionKey))
            name = _names(gw, [pair]).get(pair)
            if name is not None:
                status["name"] = name  # the tool's title, read now (never stored)
            return dict(status)
        return dict(call(run))

    @server.tool(description="Sessions the gateway knows, ordered by key, one page at a "
                 "time: pass nextCursor as cursor for the next page.")
    def sessions_list(agentId: str | None = None, cursor: str | None = None,  # noqa: N803
                      limit: int | None = None) -> dict[str, Any]:
        def run(gw: Any) -> dict[str, Any]:
            page = _page_limit(limit)
            start = _cursor_offset(cursor)
            rows = gw.sessions_list(agent_id=agentId)
            chunk = rows[start:start + page]
            following = start + page
            names = _names(gw, [(r.session_key, r.agent_id) for r in chunk])
            sessions = [dict(_plain(r), **({"name": names[(r.session_key, r.agent_id)]}
                                           if (r.session_key, r.agent_id) in names else {}))
                        for r in chunk]
            return {"sessions": sessions, "total": len(rows),
                    "nextCursor": str(following) if following < len(rows) else None}
        return dict(call(run))

    @server.tool(description="Send text into another running coding-agent session: an idle "
                 "one takes a turn with it, a busy one gets it at its next turn. delivery "
                 "says what happened (delivered, queued, refused, "
                 "no_live_session); with watch, you watch the session that received it.")
    def sessions_send(targetKey: str, text: str, watch: bool = False,  # noqa: N803
                      senderKey: str | None = None) -> dict[str, Any]:  # noqa: N803
        def run(gw: Any) -> dict[str, Any]:
            sender = _caller(holder, senderKey, "the senderKey argument")
            return send(gw.watch, state_dir_of(holder.location or default_state_path()),
                        sender, targetKey, text, watch=watch)
        return dict(call(run))

    @server.tool(description="The watcher's queued notices, oldest first, without "
                 "consuming them.")
    def pending_notices(watcherKey: str | None = None) -> dict[str, Any]:  # noqa: N803
        return {"notices": call(lambda gw: gw.pending_notices(_caller(holder, watcherKey)))}

    @server.tool(description="The watcher's turn: consume its queued notices and "
                 "acknowledge them (each is returned once).")
    def drain(watcherKey: str | None = None) -> dict[str, Any]:  # noqa: N803
        return {"notices": call(lambda gw: gw.drain(_caller(holder, watcherKey)))}

    @server.tool(description="Make this session a manager: told (and, with wake, woken "
                 "when idle) when someone else steps into the other sessions of its "
                 "project; on=false makes it a worker again and drops its watches.")
    def manage(on: bool = True, wake: bool = True) -> dict[str, Any]:
        def run(gw: Any) -> dict[str, Any]:
            key = _caller(holder, None, "ssa manage --session KEY in a shell")
            changed = set_role(gw, key, off=not on, wake=wake)
            role, woken = gw.role(key)
            return {"sessionKey": key, "role": role, "wake": woken, "changed": changed}
        return dict(call(run))

    return server


def main(db: str | None, *, err: TextIO) -> int:
    """Serve MCP on stdin/stdout until stdin closes or SIGTERM/SIGINT; returns the exit code.

    Blocks the calling (main) thread. On SIGTERM or SIGINT the gateway is
    closed and the process exits at once with 128 + the signal's number (the
    SDK reads stdin on a worker thread that no cancellation can stop, so a
    normal unwind would wait for the client to close stdin). 1 with one line
    on ``err`` when the ``mcp`` extra is missing.
    """
    try:
        build_server(GatewayHolder(None))  # the SDK is importable
    except ImportError:
        err.write("ssa: ssa mcp needs the mcp extra: python -m pip install "
                  "'session-state-awareness[mcp]'\n")
        return 1
    location = db if db is not None else (os.environ.get("SSA_DB") or None)
    if location is not None and "://" not in location:
        # MCP arguments reach no shell: expand ~ as the hooks' shell does, so both name
        # the same database (not a literal ./~/ folder).
        location = os.path.expanduser(location)
    holder = GatewayHolder(location)
    server = build_server(holder)

    def stop(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(Exception):
            holder.close()
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        from actors.agents.mcp_stdio import run  # noqa: PLC0415 - needs the mcp extra

        run(server)  # the SDK's stdio, each request line bounded and checked
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        holder.close()
    return 0
