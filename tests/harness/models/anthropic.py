"""The Anthropic Messages API shape (Claude Code with ``ANTHROPIC_BASE_URL``).

``POST /v1/messages`` (streamed as server-sent events when ``stream`` is
true, else one JSON message), ``POST /v1/messages/count_tokens`` (a size
estimate: 1 token per 4 bytes of the body), ``GET /v1/models``. A messages
request is ``main`` when it offers tools, else ``side`` (Claude Code's title,
topic and summary requests carry no tools).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from tests.harness.models._server import NO_RETRY, Reply
from tests.harness.script import Answer, Fail, Text, ToolUse

__all__ = ["AnthropicMessages"]

_ids = itertools.count(1)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _purpose(body: Any) -> str:
    system = body.get("system") if isinstance(body, dict) else None
    text = json.dumps(system).lower() if system else ""
    if "title" in text:
        return "title"
    if "summar" in text:
        return "summary"
    if "topic" in text:
        return "topic"
    return "no-tools"


class AnthropicMessages:
    """Renders answers as Anthropic Messages responses (see the module docstring)."""

    name = "anthropic"

    def __repr__(self) -> str:
        return "anthropic-messages"

    def classify(self, method: str, path: str, body: Any) -> tuple[str, str]:
        """``(kind, purpose)``: ``main`` for a messages request with tools."""
        path = path.rstrip("/")
        if method == "POST" and path.endswith("/messages/count_tokens"):
            return "count_tokens", ""
        if method == "POST" and path.endswith("/messages"):
            if isinstance(body, dict) and body.get("tools"):
                return "main", ""
            return "side", _purpose(body)
        if path.endswith("/models") or "/models/" in path:
            return "models", ""
        return "other", path

    def texts(self, body: Any) -> tuple[str, ...]:
        """System texts, then every message's text and tool-result text."""
        if not isinstance(body, dict):
            return ()
        out: list[str] = []
        system = body.get("system")
        out.extend(_block_texts(system))
        for message in body.get("messages") or ():
            if isinstance(message, dict):
                out.extend(_block_texts(message.get("content")))
        return tuple(out)

    def tool_names(self, body: Any) -> tuple[str, ...]:
        """The ``name`` of every entry of ``tools``."""
        tools = body.get("tools") if isinstance(body, dict) else None
        return tuple(str(t.get("name")) for t in tools or () if isinstance(t, dict))

    def render(self, answer: Answer, body: Any) -> Reply:
        """The Messages response for ``answer`` (SSE when ``body.stream``)."""
        if isinstance(answer, Fail):
            error = {"type": "error", "error": {"type": _error_type(answer.status),
                                                "message": answer.message}}
            return Reply(answer.status, "application/json", [json.dumps(error).encode()],
                         headers=NO_RETRY)
        model = str(body.get("model", "claude-harness")) if isinstance(body, dict) else "m"
        blocks: list[dict[str, Any]] = []
        if isinstance(answer, Text) and answer.text:
            blocks.append({"type": "text", "text": answer.text})
        if isinstance(answer, ToolUse):
            if answer.text:
                blocks.append({"type": "text", "text": answer.text})
            blocks.append({"type": "tool_use", "id": f"toolu_harness{next(_ids):08d}",
                           "name": answer.name, "input": dict(answer.arguments)})
        stop = "tool_use" if isinstance(answer, ToolUse) else "end_turn"
        message = {"id": f"msg_harness{next(_ids):08d}", "type": "message", "role": "assistant",
                   "model": model, "content": blocks, "stop_reason": stop,
                   "stop_sequence": None,
                   "usage": {"input_tokens": 100, "output_tokens": 10,
                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        if not (isinstance(body, dict) and body.get("stream")):
            return Reply(200, "application/json", [json.dumps(message).encode()])
        pause = answer.chunk_delay_s if isinstance(answer, Text) else 0.0
        return Reply(200, "text/event-stream", _stream(message), pause=pause)

    def fixed(self, kind: str, path: str, body: Any) -> Reply:
        """Token counts, a one-model list, or a 404 error body."""
        if kind == "count_tokens":
            size = len(json.dumps(body)) if body is not None else 0
            return Reply(200, "application/json",
                         [json.dumps({"input_tokens": max(1, size // 4)}).encode()])
        if kind == "models":
            model = {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Harness",
                     "created_at": "2025-01-01T00:00:00Z"}
            listing = {"data": [model], "has_more": False, "first_id": model["id"],
                       "last_id": model["id"]}
            return Reply(200, "application/json", [json.dumps(listing).encode()])
        error = {"type": "error", "error": {"type": "not_found_error", "message": path}}
        return Reply(404, "application/json", [json.dumps(error).encode()])


def _error_type(status: int) -> str:
    return {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
            404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"
            }.get(status, "api_error")


def _block_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content or ():
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            out.append(block["text"])
        if block.get("type") == "tool_result":
            out.extend(_block_texts(block.get("content")))
    return out


def _stream(message: dict[str, Any]) -> Iterator[bytes]:
    """The SSE events of ``message``; text streamed one word per chunk."""
    start = dict(message, content=[], stop_reason=None)
    yield _sse("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}})
            words = block["text"].split(" ")
            for n, word in enumerate(words):
                piece = word if n == len(words) - 1 else word + " "
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta",
                                                             "text": piece}})
        else:
            yield _sse("content_block_start", {
                "type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"],
                                  "input": {}}})
            yield _sse("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _sse("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": message["stop_reason"],
                                           "stop_sequence": None},
                                 "usage": {"output_tokens": 10}})
    yield _sse("message_stop", {"type": "message_stop"})
