"""``ssa mcp``'s six tools: plain functions on one lazily opened gateway, and their schemas.

:func:`tool_functions` gives each tool as a plain function whose keyword
parameters are the tool's arguments (camelCase, as the notice text names
them) and whose result is a JSON object (a ``dict``). :func:`input_schema`
derives a tool's JSON Schema from its function's signature, in the shape the
MCP SDK (pydantic) generated for the same function when it served, so a
client sees the same tools; the tests compare both, tool for tool.

A function raises :class:`ToolFailure` for what a caller can fix (a bad key,
a limit out of range, a database that cannot be opened): the client gets a
tool error with the message. Functions block (database, files): the server
runs them on worker threads. What only a tool call needs (the gateway,
msgspec, the send and manage code) is imported at the first call, so the
first answers (``initialize``, ``tools/list``) come before it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from actors.errors import SessionStateError
from persistence.errors import BackendNotInstalled, StorageError
from persistence.locations import default_state_path

__all__ = ["DEFAULT_PAGE", "DEFAULT_TYPED_TEXT", "DESCRIPTIONS", "INSTRUCTIONS", "MAX_PAGE",
           "GatewayHolder", "ToolFailure", "input_schema", "output_schema", "tool_functions"]

DEFAULT_PAGE = 20
"""Rows or events per result unless ``limit`` says otherwise."""
MAX_PAGE = 50
"""The largest ``limit`` accepted: a result is sent twice (text and structured
content), and 50 events of about 250 characters each keep it near 6,000 tokens,
under Claude Code's 10,000-token warning (measured: 200 events made 137 KB)."""

DEFAULT_TYPED_TEXT = 500
"""Characters of each typed turn ``session_status`` shows unless ``typedText`` says otherwise."""

INSTRUCTIONS = (
    "Session state awareness: when a notice says 'Session \"K\" changed (other actor). "
    "Reconcile before acting: session_status sessionKey \"K\" changesSince N', call "
    "session_status with sessionKey K and changesSince N to see what changed (kinds, actors, "
    "times, where the session's tool stands, and what a person typed into an adopted "
    "session, read from its transcript). drain(watcherKey) consumes and acknowledges your "
    "notices.")

DESCRIPTIONS: dict[str, str] = {
    "session_status": "A session's state version; with changesSince, the typed changes after "
                      "that version (a page of at most `limit` events; nextChangesSince "
                      "continues), what a person typed in each listed turn of an adopted "
                      "session (typedText: at most typedText characters each, default "
                      f"{DEFAULT_TYPED_TEXT}; 0: none; read now from the tool's transcript), "
                      "where its tool stands (workerState) and its transcript (upstream). "
                      "Never consumes anything.",
    "sessions_list": "Sessions the gateway knows, ordered by key, one page at a time: pass "
                     "nextCursor as cursor for the next page.",
    "sessions_send": "Send text into another running coding-agent session: an idle one takes "
                     "a turn with it, a busy one gets it at its next turn. delivery says what "
                     "happened (delivered, queued, refused, no_live_session); with watch, you "
                     "watch the session that received it.",
    "pending_notices": "The watcher's queued notices, oldest first, without consuming them.",
    "drain": "The watcher's turn: consume its queued notices and acknowledge them (each is "
             "returned once).",
    "manage": "Make this session a manager: told (and, with wake, woken when idle) when "
              "someone else steps into the other sessions of its project; on=false makes it a "
              "worker again and drops its watches.",
}
"""Each tool's description, in the order the tools are listed."""


class ToolFailure(Exception):
    """A tool call that failed for a reason the caller can act on (``str()``: the reason)."""


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
                    from actors import Gateway  # noqa: PLC0415 - on the first tool call only

                    self._gateway = Gateway.open(self._location, monitor=False)
            return self._gateway

    def close(self) -> None:
        """Close the gateway if it was opened (idempotent; any thread; blocks up to ~10 s)."""
        with self._lock:
            self._closed = True
            gateway, self._gateway = self._gateway, None
        if gateway is not None:
            gateway.close()


def _caller(holder: GatewayHolder, given: str | None,
            option: str = "the watcherKey argument") -> str:
    """``given``, else the key of the session whose tool process runs this server.

    Raises:
        SessionStateError: not found (the message says how to name it: ``option``).
    """
    from actors.agents.manage import resolve_self  # noqa: PLC0415 - at a tool call only

    return resolve_self(holder.location or default_state_path(), given, option=option)


def _plain(value: Any) -> Any:
    import msgspec  # noqa: PLC0415 - at a tool call only (the first answers need none)

    return msgspec.to_builtins(value)


def _upstream_of(gw: Any, key: str, agent_id: str | None) -> dict[str, Any] | None:
    """Where an adopted session's turns are read from (its tool, transcript, thread), as
    ``ssa status`` shows it, or ``None``. Blocks on one read; never raises for a fault."""
    from actors.monitors.where import where_of  # noqa: PLC0415 - at a call only
    from persistence import read_link  # noqa: PLC0415
    from persistence.keys import agent_id_of  # noqa: PLC0415

    try:
        with gw.read_pool.connection() as conn:
            link = read_link(conn, key, agent_id or agent_id_of(key))
    except Exception:  # a read fault: the status itself says so
        return None
    return None if link is None else dict(_plain(where_of(link, project=False)))


def _names(gw: Any, pairs: list[tuple[str, str | None]]) -> dict[tuple[str, str], str]:
    """The sessions' names in their tools (:mod:`actors.agents.linkname`), read now and
    never stored, by ``(key, agent id)`` (``None``: the key's agent); ``{}`` when the
    links cannot be read (a name is a courtesy)."""
    from actors.agents.linkname import session_names  # noqa: PLC0415 - at a call only
    from persistence.keys import agent_id_of  # noqa: PLC0415

    try:
        return session_names(gw, [(key, agent or agent_id_of(key)) for key, agent in pairs])
    except StorageError:
        return {}


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


def tool_functions(holder: GatewayHolder) -> dict[str, Callable[..., dict[str, Any]]]:
    """The six tools as plain functions on ``holder``'s gateway, in :data:`DESCRIPTIONS` order.

    Each takes the tool's arguments as keyword arguments (already converted to
    their annotated types) and returns the result object. Any thread; blocks
    on the database.

    Raises (from a function):
        ToolFailure: a bad argument, a bad key, a database that cannot be opened, ...
    """
    def call(fn: Callable[[Any], Any]) -> Any:
        try:
            return fn(holder.get())
        except (SessionStateError, StorageError, BackendNotInstalled, OSError, ValueError,
                TypeError) as exc:  # a bad key, a database that cannot be opened, ...
            raise ToolFailure(str(exc)) from None

    def session_status(sessionKey: str, changesSince: int | None = None,  # noqa: N803
                       agentId: str | None = None,  # noqa: N803
                       limit: int | None = None,
                       typedText: int | None = None) -> dict[str, Any]:  # noqa: N803
        def run(gw: Any) -> dict[str, Any]:
            page = _page_limit(limit)
            chars = DEFAULT_TYPED_TEXT if typedText is None else typedText
            status = _plain(gw.session_status(
                sessionKey, changes_since=changesSince, agent_id=agentId,
                typed_text=chars if chars and changesSince is not None else None))
            changes = status.get("stateChanges")
            if changes is not None and len(changes["events"]) > page:
                changes["events"] = changes["events"][:page]
                changes["truncated"] = True
                status["nextChangesSince"] = changes["events"][-1]["sequence"]
            if changes is not None and "typedText" in status:
                last = changes["events"][-1]["sequence"] if changes["events"] else 0
                status["typedText"] = [t for t in status["typedText"] if t["sequence"] <= last]
            upstream = _upstream_of(gw, sessionKey, agentId)
            if upstream is not None:
                status["upstream"] = upstream
            name = next(iter(_names(gw, [(sessionKey, agentId)]).values()), None)
            if name is not None:
                status["name"] = name  # the tool's title, read now (never stored)
            return dict(status)
        return dict(call(run))

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

    def sessions_send(targetKey: str, text: str, watch: bool = False,  # noqa: N803
                      senderKey: str | None = None) -> dict[str, Any]:  # noqa: N803
        def run(gw: Any) -> dict[str, Any]:
            from actors.agents.manage import state_dir_of  # noqa: PLC0415 - at a call only
            from actors.agents.send import send  # noqa: PLC0415 - at a tool call only

            sender = _caller(holder, senderKey, "the senderKey argument")
            return send(gw.watch, state_dir_of(holder.location or default_state_path()),
                        sender, targetKey, text, watch=watch)
        return dict(call(run))

    def pending_notices(watcherKey: str | None = None) -> dict[str, Any]:  # noqa: N803
        return {"notices": call(lambda gw: gw.pending_notices(_caller(holder, watcherKey)))}

    def drain(watcherKey: str | None = None) -> dict[str, Any]:  # noqa: N803
        return {"notices": call(lambda gw: gw.drain(_caller(holder, watcherKey)))}

    def manage(on: bool = True, wake: bool = True) -> dict[str, Any]:
        def run(gw: Any) -> dict[str, Any]:
            from actors.agents.manage import set_role  # noqa: PLC0415 - at a tool call only

            key = _caller(holder, None, "ssa manage --session KEY in a shell")
            changed = set_role(gw, key, off=not on, wake=wake)
            role, woken = gw.role(key)
            return {"sessionKey": key, "role": role, "wake": woken, "changed": changed}
        return dict(call(run))

    functions = {f.__name__: f for f in (session_status, sessions_list, sessions_send,
                                         pending_notices, drain, manage)}
    return {name: functions[name] for name in DESCRIPTIONS}


_JSON_TYPES = {"str": "string", "int": "integer", "bool": "boolean"}


def _property(name: str, annotation: str) -> dict[str, Any]:
    """The schema of one parameter annotated ``T`` or ``T | None`` (T: str, int or bool)."""
    kinds = [part.strip() for part in annotation.split("|")]
    types = [{"type": "null" if kind == "None" else _JSON_TYPES[kind]} for kind in kinds]
    prop: dict[str, Any] = {"anyOf": types} if len(types) > 1 else dict(types[0])
    prop["title"] = name.title().replace("_", " ")
    return prop


def input_schema(name: str, function: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema of ``function``'s keyword parameters, as the MCP SDK generated it (pure).

    Reads the function's code object and string annotations (no ``inspect``,
    which costs a start-up): each parameter is a property titled as pydantic
    titles it, with its default, and those without one are ``required``.

    Raises:
        KeyError: a parameter's type is none of ``str``, ``int``, ``bool`` (maybe ``| None``).
    """
    code = function.__code__
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    defaults = dict(zip(params[len(params) - len(function.__defaults__ or ()):],
                        function.__defaults__ or (), strict=True))
    defaults.update(function.__kwdefaults__ or {})
    properties: dict[str, Any] = {}
    for param in params:
        prop = _property(param, str(function.__annotations__[param]))
        if param in defaults:
            prop["default"] = defaults[param]
        properties[param] = prop
    schema: dict[str, Any] = {"properties": properties}
    required = [p for p in params if p not in defaults]
    if required:
        schema["required"] = required
    schema["type"] = "object"
    schema["title"] = f"{name}Arguments"
    return schema


def output_schema(name: str) -> dict[str, Any]:
    """The output schema of a tool whose result is a ``dict`` (as the SDK listed it; pure)."""
    return {"type": "object", "additionalProperties": True, "title": f"{name}DictOutput"}
