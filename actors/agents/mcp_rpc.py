"""``ssa mcp``'s answers: MCP over JSON-RPC 2.0, for a request already parsed.

:class:`McpServer` answers ``initialize`` (the protocol version negotiated
as the MCP specification says: the client's when we speak it, else our
latest), ``ping``, ``tools/list`` and ``tools/call``; it ignores
notifications and responses, and answers any other method with ``-32601``.
A ``tools/call`` whose ``params`` have no tool ``name`` or whose
``arguments`` are no object is ``-32602``; an unknown tool, arguments that
do not fit the tool's schema and a failing tool are tool errors (a result
with ``isError: true`` and the reason as text), as the MCP SDK answered.

The SDK is not imported: it cost ``ssa mcp`` about 0.8 s before its first
answer (pydantic underneath). Its wire format is kept: a tool's result is
its JSON text (indented by two) and the same object as
``structuredContent``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from actors.agents.mcp_arguments import ArgumentsRefused, checked_arguments
from actors.agents.mcp_tools import (
    DESCRIPTIONS,
    INSTRUCTIONS,
    ToolFailure,
    input_schema,
    output_schema,
)

__all__ = ["INVALID_PARAMS", "LATEST_PROTOCOL_VERSION", "METHOD_NOT_FOUND",
           "PROTOCOL_VERSIONS", "SERVER_NAME", "McpServer", "negotiated_version"]

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The MCP revisions reached through ``initialize`` that this server speaks, oldest first
(the SDK 2.3's ``HANDSHAKE_PROTOCOL_VERSIONS``; the tests compare them)."""
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[-1]
SERVER_NAME = "ssa"
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


def negotiated_version(requested: object) -> str:
    """The version ``initialize`` answers: ``requested`` if spoken here, else the latest (pure)."""
    if isinstance(requested, str) and requested in PROTOCOL_VERSIONS:
        return requested
    return LATEST_PROTOCOL_VERSION


def _error(request_id: object, code: int, message: str, data: object = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class McpServer:
    """The MCP answers of the ``ssa`` tools (pure but for the tool functions it calls).

    Args:
        functions: ``{tool name: function}`` (:func:`actors.agents.mcp_tools.tool_functions`),
            in the order they are listed.
    """

    def __init__(self, functions: Mapping[str, Callable[..., dict[str, Any]]]) -> None:
        self._functions = dict(functions)
        self._schemas = {name: input_schema(name, fn) for name, fn in self._functions.items()}

    def tools(self) -> list[dict[str, Any]]:
        """The ``tools/list`` entries: name, description, inputSchema, outputSchema (pure)."""
        return [{"name": name, "description": DESCRIPTIONS.get(name, ""),
                 "inputSchema": self._schemas[name], "outputSchema": output_schema(name)}
                for name in self._functions]

    @staticmethod
    def slow(message: Mapping[str, Any]) -> bool:
        """Whether answering ``message`` may block (a tool call): run it off the reading thread."""
        return message.get("method") == "tools/call" and "id" in message

    def handle(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """The answer to one JSON-RPC message (a valid request shape), or ``None`` (none due).

        A ``tools/call`` blocks while its tool runs (any thread); the rest are pure.
        """
        method = message.get("method")
        if "id" not in message or not isinstance(method, str):
            return None  # a notification (initialized, cancelled, ...) or a response
        request_id = message["id"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            return self._result(request_id, {
                "capabilities": {"tools": {"listChanged": False}},
                "instructions": INSTRUCTIONS,
                "protocolVersion": negotiated_version(params.get("protocolVersion")),
                "serverInfo": {"name": SERVER_NAME, "version": ""}})
        if method == "ping":
            return self._result(request_id, {})
        if method == "tools/list":
            return self._result(request_id, {"tools": self.tools()})
        if method == "tools/call":
            name = params.get("name")
            arguments = params.get("arguments")
            if not isinstance(name, str) or not isinstance(arguments, dict | None):
                return _error(request_id, INVALID_PARAMS, "Invalid request parameters", "")
            return self._result(request_id, self.call_tool(name, arguments or {}))
        return _error(request_id, METHOD_NOT_FOUND, "Method not found", method)

    @staticmethod
    def _result(request_id: object, result: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The ``tools/call`` result of tool ``name`` (blocks while it runs; any thread).

        Never raises for a caller's mistake: an unknown tool, arguments that do not fit and
        a :class:`ToolFailure` are results with ``isError``.
        """
        function = self._functions.get(name)
        if function is None:
            return _tool_error(f"Unknown tool: {name}")
        try:
            result = function(**checked_arguments(self._schemas[name], arguments))
        except (ArgumentsRefused, ToolFailure) as exc:
            return _tool_error(f"Error executing tool {name}: {exc}")
        except Exception as exc:  # a defect: still a tool error, as the SDK answered it
            return _tool_error(f"Error executing tool {name}: {type(exc).__name__}: {exc}")
        return {"content": [{"type": "text",
                             "text": json.dumps(result, indent=2, ensure_ascii=False)}],
                "isError": False, "structuredContent": result}
