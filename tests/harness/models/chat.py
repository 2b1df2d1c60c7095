"""The OpenAI Chat Completions API shape (OpenCode's ``@ai-sdk/openai-compatible``
provider, Pi's ``openai-completions`` API).

``POST /v1/chat/completions`` (streamed as ``data:`` chunks ending with
``data: [DONE]`` when ``stream`` is true, else one JSON completion) and
``GET /v1/models`` (one model, :data:`MODEL_ID`). A completion request is
``main`` when it offers tools, else ``side`` (OpenCode's title and summary
requests carry none).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

from tests.harness.models._server import NO_RETRY, Reply
from tests.harness.script import Answer, Fail, Text, ToolUse

__all__ = ["MODEL_ID", "OpenAIChat", "OpenAIChatPlain"]

MODEL_ID = "harness-model"
"""The model id the fake server lists (and the tools are configured with)."""

_ids = itertools.count(1)


class OpenAIChat:
    """Renders answers as Chat Completions responses (see the module docstring)."""

    name = "chat"

    def __repr__(self) -> str:
        return "openai-chat"

    def classify(self, method: str, path: str, body: Any) -> tuple[str, str]:
        """``(kind, purpose)``: ``main`` for a completion request with tools."""
        path = path.rstrip("/")
        if method == "POST" and path.endswith("/chat/completions"):
            if isinstance(body, dict) and body.get("tools"):
                return "main", ""
            return "side", _purpose(body)
        if path.endswith("/models"):
            return "models", ""
        return "other", path

    def texts(self, body: Any) -> tuple[str, ...]:
        """Every message's text (system, user, assistant, tool), in order."""
        if not isinstance(body, dict):
            return ()
        out: list[str] = []
        for message in body.get("messages") or ():
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            for part in content if isinstance(content, list) else ():
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    out.append(part["text"])
        return tuple(out)

    def tool_names(self, body: Any) -> tuple[str, ...]:
        """Every ``tools[].function.name``."""
        tools = body.get("tools") if isinstance(body, dict) else None
        return tuple(str((t.get("function") or {}).get("name")) for t in tools or ()
                     if isinstance(t, dict))

    def render(self, answer: Answer, body: Any) -> Reply:
        """The completion for ``answer`` (chunks when ``body.stream``)."""
        if isinstance(answer, Fail):
            error = {"error": {"message": answer.message, "type": "invalid_request_error",
                               "code": None, "param": None}}
            return Reply(answer.status, "application/json", [json.dumps(error).encode()],
                         headers=NO_RETRY)
        model = str(body.get("model", MODEL_ID)) if isinstance(body, dict) else MODEL_ID
        said = answer.text if isinstance(answer, (Text, ToolUse)) else ""
        call = None
        if isinstance(answer, ToolUse):
            call = {"id": f"call_h{next(_ids):08d}", "type": "function",
                    "function": {"name": answer.name,
                                 "arguments": json.dumps(dict(answer.arguments))}}
        finish = "tool_calls" if call else "stop"
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        base = {"id": f"chatcmpl-h{next(_ids):08d}", "created": int(time.time()), "model": model}
        if not (isinstance(body, dict) and body.get("stream")):
            message: dict[str, Any] = {"role": "assistant", "content": said or None}
            if call:
                message["tool_calls"] = [call]
            done = {**base, "object": "chat.completion", "usage": usage,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
            return Reply(200, "application/json", [json.dumps(done).encode()])
        pause = answer.chunk_delay_s if isinstance(answer, Text) else 0.0
        return Reply(200, "text/event-stream", _stream(base, said, call, finish, usage),
                     pause=pause)

    def fixed(self, kind: str, path: str, body: Any) -> Reply:
        """The one-model list, or a 404 error body."""
        if kind == "models":
            listing = {"object": "list", "data": [{"id": MODEL_ID, "object": "model",
                                                   "created": 0, "owned_by": "harness"}]}
            return Reply(200, "application/json", [json.dumps(listing).encode()])
        error = {"error": {"message": f"no route {path}", "type": "not_found"}}
        return Reply(404, "application/json", [json.dumps(error).encode()])


def _purpose(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    text = json.dumps(messages[:2] if isinstance(messages, list) else "").lower()
    if "title" in text:
        return "title"
    if "summar" in text:
        return "summary"
    return "no-tools"


def _chunk(base: dict[str, Any], delta: dict[str, Any], finish: str | None = None,
           usage: dict[str, int] | None = None) -> bytes:
    data: dict[str, Any] = {**base, "object": "chat.completion.chunk",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        data["usage"] = usage
    return f"data: {json.dumps(data)}\n\n".encode()


def _stream(base: dict[str, Any], said: str, call: dict[str, Any] | None, finish: str,
            usage: dict[str, int]) -> Iterator[bytes]:
    yield _chunk(base, {"role": "assistant", "content": ""})
    if said:
        words = said.split(" ")
        for n, word in enumerate(words):
            yield _chunk(base, {"content": word if n == len(words) - 1 else word + " "})
    if call:
        yield _chunk(base, {"tool_calls": [{"index": 0, **call}]})
    yield _chunk(base, {}, finish, usage)
    yield b"data: [DONE]\n\n"


class OpenAIChatPlain(OpenAIChat):
    """Chat Completions for a tool that offers the model no tools (Aider).

    Aider sends its edit format as plain text and never a ``tools`` list, so
    the structural rule of :class:`OpenAIChat` would make every request a
    ``side`` one. Here a completion request is ``main`` unless its system
    prompt asks for a commit message or a summary (Aider's weak-model side
    requests), which get the side answer.
    """

    name = "chat-plain"

    def __repr__(self) -> str:
        return "openai-chat-plain"

    def classify(self, method: str, path: str, body: Any) -> tuple[str, str]:
        """``(kind, purpose)``: ``main`` for every completion request but the side ones."""
        kind, purpose = super().classify(method, path, body)
        if kind != "side":
            return kind, purpose
        system = _system_text(body).lower()
        if "commit message" in system:
            return "side", "commit"
        if "summar" in system:
            return "side", "summary"
        return "main", ""


def _system_text(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    out: list[str] = []
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, dict) and message.get("role") == "system" \
                and isinstance(message.get("content"), str):
            out.append(message["content"])
    return "\n".join(out)
