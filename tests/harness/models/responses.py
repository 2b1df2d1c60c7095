"""The OpenAI Responses API shape (Codex with a custom ``model_providers`` entry).

``POST /v1/responses`` (streamed as server-sent events when ``stream`` is
true, else one JSON response); ``GET /v1/models`` answers an empty list (the
tool then keeps its built-in model metadata). A responses request is
``main`` when it offers tools, else ``side``.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

from tests.harness.models._server import NO_RETRY, Reply
from tests.harness.script import Answer, Fail, Text, ToolUse

__all__ = ["OpenAIResponses"]

_ids = itertools.count(1)


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


class OpenAIResponses:
    """Renders answers as Responses API responses (see the module docstring)."""

    name = "responses"

    def __repr__(self) -> str:
        return "openai-responses"

    def classify(self, method: str, path: str, body: Any) -> tuple[str, str]:
        """``(kind, purpose)``: ``main`` for a responses request with tools."""
        path = path.rstrip("/")
        if method == "POST" and path.endswith("/responses"):
            if isinstance(body, dict) and body.get("tools"):
                return "main", ""
            return "side", _purpose(body)
        if method == "POST" and path.endswith("/responses/compact"):
            return "side", "compact"
        if path.endswith("/models"):
            return "models", ""
        return "other", path

    def texts(self, body: Any) -> tuple[str, ...]:
        """``instructions``, then every input item's text and tool output."""
        if not isinstance(body, dict):
            return ()
        out: list[str] = []
        if isinstance(body.get("instructions"), str):
            out.append(body["instructions"])
        items = body.get("input")
        if isinstance(items, str):
            return (*out, items)
        for item in items or ():
            if not isinstance(item, dict):
                continue
            content = item.get("content")
            if isinstance(content, str):
                out.append(content)
            for part in content if isinstance(content, list) else ():
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    out.append(part["text"])
            output = item.get("output")
            if isinstance(output, str):
                out.append(output)
            elif isinstance(output, list):
                out.extend(p["text"] for p in output
                           if isinstance(p, dict) and isinstance(p.get("text"), str))
        return tuple(out)

    def tool_names(self, body: Any) -> tuple[str, ...]:
        """Every tool's ``name`` (built-in tools by their ``type``; the members of a
        ``namespace`` tool by their own names)."""
        return tuple(_namespaces(body))

    def render(self, answer: Answer, body: Any) -> Reply:
        """The response for ``answer`` (SSE when ``body.stream``)."""
        if isinstance(answer, Fail):
            error = {"error": {"message": answer.message, "type": "invalid_request_error",
                               "code": None, "param": None}}
            return Reply(answer.status, "application/json", [json.dumps(error).encode()],
                         headers=NO_RETRY)
        model = str(body.get("model", "harness")) if isinstance(body, dict) else "harness"
        items: list[dict[str, Any]] = []
        said = answer.text if isinstance(answer, (Text, ToolUse)) else ""
        if said:
            items.append({"type": "message", "id": f"msg_h{next(_ids):08d}", "role": "assistant",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": said, "annotations": []}]})
        if isinstance(answer, ToolUse):
            call = {"type": "function_call", "id": f"fc_h{next(_ids):08d}",
                    "call_id": f"call_h{next(_ids):08d}", "name": answer.name,
                    "arguments": json.dumps(dict(answer.arguments)), "status": "completed"}
            namespace = _namespaces(body).get(answer.name)
            if namespace:
                call["namespace"] = namespace
            items.append(call)
        response = {"id": f"resp_h{next(_ids):08d}", "object": "response",
                    "created_at": int(time.time()), "status": "completed", "model": model,
                    "output": items,
                    "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens": 10,
                              "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": 110}}
        if not (isinstance(body, dict) and body.get("stream")):
            return Reply(200, "application/json", [json.dumps(response).encode()])
        pause = answer.chunk_delay_s if isinstance(answer, Text) else 0.0
        return Reply(200, "text/event-stream", _stream(response), pause=pause)

    def fixed(self, kind: str, path: str, body: Any) -> Reply:
        """An empty model list, or a 404 error body."""
        if kind == "models":
            return Reply(200, "application/json",
                         [json.dumps({"object": "list", "data": [], "models": []}).encode()])
        error = {"error": {"message": f"no route {path}", "type": "not_found"}}
        return Reply(404, "application/json", [json.dumps(error).encode()])


def _namespaces(body: Any) -> dict[str, str | None]:
    """Tool name -> the ``namespace`` tool holding it (``None`` at the top level)."""
    out: dict[str, str | None] = {}
    for tool in (body.get("tools") if isinstance(body, dict) else None) or ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            for member in tool.get("tools") or ():
                if isinstance(member, dict) and member.get("name"):
                    out[str(member["name"])] = str(tool.get("name"))
        else:
            out[str(tool.get("name") or tool.get("type"))] = None
    return out


def _purpose(body: Any) -> str:
    """What a request without tools looks like, from its last input text (Codex's
    title request ends "Generate a concise, single-line task title ...")."""
    items = body.get("input") if isinstance(body, dict) else None
    last = items[-1] if isinstance(items, list) and items else {}
    text = json.dumps(last).lower()
    if "title" in text:
        return "title"
    if "summar" in text:
        return "summary"
    return "no-tools"


def _stream(response: dict[str, Any]) -> Iterator[bytes]:
    """The SSE events of ``response``; text streamed one word per delta."""
    seq = itertools.count()
    start = dict(response, status="in_progress", output=[])
    yield _sse({"type": "response.created", "sequence_number": next(seq), "response": start})
    yield _sse({"type": "response.in_progress", "sequence_number": next(seq),
                "response": start})
    for index, item in enumerate(response["output"]):
        opened = dict(item, status="in_progress")
        if item["type"] == "message":
            opened["content"] = []
        elif item["type"] == "function_call":
            opened["arguments"] = ""
        yield _sse({"type": "response.output_item.added", "sequence_number": next(seq),
                    "output_index": index, "item": opened})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            yield _sse({"type": "response.content_part.added", "sequence_number": next(seq),
                        "item_id": item["id"], "output_index": index, "content_index": 0,
                        "part": part})
            words = text.split(" ")
            for n, word in enumerate(words):
                yield _sse({"type": "response.output_text.delta", "sequence_number": next(seq),
                            "item_id": item["id"], "output_index": index, "content_index": 0,
                            "delta": word if n == len(words) - 1 else word + " "})
            yield _sse({"type": "response.output_text.done", "sequence_number": next(seq),
                        "item_id": item["id"], "output_index": index, "content_index": 0,
                        "text": text})
            yield _sse({"type": "response.content_part.done", "sequence_number": next(seq),
                        "item_id": item["id"], "output_index": index, "content_index": 0,
                        "part": item["content"][0]})
        else:
            yield _sse({"type": "response.function_call_arguments.delta",
                        "sequence_number": next(seq), "item_id": item["id"],
                        "output_index": index, "delta": item["arguments"]})
            yield _sse({"type": "response.function_call_arguments.done",
                        "sequence_number": next(seq), "item_id": item["id"],
                        "output_index": index, "arguments": item["arguments"]})
        yield _sse({"type": "response.output_item.done", "sequence_number": next(seq),
                    "output_index": index, "item": item})
    yield _sse({"type": "response.completed", "sequence_number": next(seq), "response": response})
