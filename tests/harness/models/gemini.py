"""The Gemini API shape (Gemini CLI with ``GOOGLE_GEMINI_BASE_URL``, ``@google/genai``).

``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (server-sent
events, one ``data:`` JSON ``GenerateContentResponse`` per chunk),
``POST .../<model>:generateContent`` (one JSON response),
``POST .../<model>:countTokens`` (``{"totalTokens": n}``, 1 token per 4 bytes
of the body) and ``GET /v1beta/models`` (one model). A generation request is
``main`` when it offers function declarations, else ``side`` (Gemini CLI's
next-speaker check, compression summary, session summary and title requests
carry none). A side request that asks for JSON (``generationConfig.
responseMimeType: "application/json"``) gets an object filled from its
response schema (the next-speaker check's ``next_speaker`` says ``user``), so
the tool's own parsing of it succeeds; a compression request (its system
instruction asks for a ``<state_snapshot>``) gets its text wrapped in one, as
a real model answers. ``usageMetadata.promptTokenCount`` is the request's
size / 4, so a compression of a long history shrinks it (with a fixed count
Gemini CLI refuses every compression as "inflated").

Whether to stream is in the request's path, not its body, while
:meth:`GeminiApi.render` gets only the body: :meth:`GeminiApi.classify`
remembers it per thread (the fake server classifies and answers a request in
the same handler thread, :mod:`tests.harness.models._server`).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any

from tests.harness.models._server import Reply
from tests.harness.script import Answer, Fail, Text, ToolUse

__all__ = ["GEMINI_MODEL", "GeminiApi"]

GEMINI_MODEL = "gemini-2.5-flash"
"""The model the harness configures (a name Gemini CLI knows, so no model dialog)."""

_ids = itertools.count(1)
_STATE_SNAPSHOT = "<state_snapshot>"
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
           404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
           503: "UNAVAILABLE"}


class GeminiApi:
    """Renders answers as Gemini ``GenerateContentResponse`` bodies (see the module docstring)."""

    name = "gemini"

    def __init__(self) -> None:
        self._local = threading.local()

    def __repr__(self) -> str:
        return "gemini-api"

    def classify(self, method: str, path: str, body: Any) -> tuple[str, str]:
        """``(kind, purpose)``: ``main`` for a generation request with function declarations."""
        path = path.rstrip("/")
        _, _, verb = path.rpartition(":")
        self._local.stream = verb == "streamGenerateContent"
        if method == "POST" and verb in ("streamGenerateContent", "generateContent"):
            if self.tool_names(body):
                return "main", ""
            return "side", _purpose(body)
        if method == "POST" and verb == "countTokens":
            return "count_tokens", ""
        if method == "GET" and "/models" in path:
            return "models", ""
        return "other", path

    def texts(self, body: Any) -> tuple[str, ...]:
        """The system instruction's texts, then every content's texts and function
        responses (as JSON), in order."""
        if not isinstance(body, dict):
            return ()
        out: list[str] = []
        system = body.get("systemInstruction")
        if isinstance(system, dict):
            out.extend(_part_texts(system.get("parts")))
        elif isinstance(system, str):
            out.append(system)
        for content in body.get("contents") or ():
            if isinstance(content, dict):
                out.extend(_part_texts(content.get("parts")))
        return tuple(out)

    def tool_names(self, body: Any) -> tuple[str, ...]:
        """Every ``tools[].functionDeclarations[].name``."""
        tools = body.get("tools") if isinstance(body, dict) else None
        names: list[str] = []
        for tool in tools or ():
            for decl in (tool.get("functionDeclarations") or ()) if isinstance(tool, dict) else ():
                if isinstance(decl, dict) and isinstance(decl.get("name"), str):
                    names.append(decl["name"])
        return tuple(names)

    def render(self, answer: Answer, body: Any) -> Reply:
        """The response for ``answer``: SSE chunks for ``streamGenerateContent``, else JSON."""
        if isinstance(answer, Fail):
            error = {"error": {"code": answer.status, "message": answer.message,
                               "status": _STATUS.get(answer.status, "UNKNOWN")}}
            return Reply(answer.status, "application/json", [json.dumps(error).encode()])
        parts: list[dict[str, Any]] = []
        if isinstance(answer, ToolUse):
            if answer.text:
                parts.append({"text": answer.text})
            parts.append({"functionCall": {"id": f"call_h{next(_ids):08d}", "name": answer.name,
                                           "args": dict(answer.arguments)}})
        elif _wants_json(body):
            parts.append({"text": json.dumps(_fill(_schema(body), answer.text))})
        elif not self.tool_names(body) and _STATE_SNAPSHOT in json.dumps(
                body.get("systemInstruction") if isinstance(body, dict) else None):
            parts.append({"text": f"{_STATE_SNAPSHOT}{answer.text}</state_snapshot>"})
        else:
            parts.append({"text": answer.text})
        stream = bool(getattr(self._local, "stream", False))
        tokens = max(100, len(json.dumps(body)) // 4)
        if not stream:
            return Reply(200, "application/json",
                         [json.dumps(_response(parts, True, tokens)).encode()])
        pause = answer.chunk_delay_s if isinstance(answer, Text) else 0.0
        return Reply(200, "text/event-stream", _stream(parts, tokens), pause=pause)

    def fixed(self, kind: str, path: str, body: Any) -> Reply:
        """Token counts, the one-model list, or a 404 error body."""
        if kind == "count_tokens":
            size = len(json.dumps(body)) if body is not None else 0
            return Reply(200, "application/json",
                         [json.dumps({"totalTokens": max(1, size // 4)}).encode()])
        if kind == "models":
            listing = {"models": [{"name": f"models/{GEMINI_MODEL}",
                                   "displayName": "Harness model",
                                   "supportedGenerationMethods": ["generateContent",
                                                                  "countTokens"]}]}
            return Reply(200, "application/json", [json.dumps(listing).encode()])
        error = {"error": {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}}
        return Reply(404, "application/json", [json.dumps(error).encode()])


def _part_texts(parts: Any) -> Iterator[str]:
    for part in parts or ():
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            yield part["text"]
        if isinstance(part.get("functionResponse"), dict):
            yield json.dumps(part["functionResponse"])
        if isinstance(part.get("functionCall"), dict):
            yield json.dumps(part["functionCall"])


def _purpose(body: Any) -> str:
    system = body.get("systemInstruction") if isinstance(body, dict) else None
    contents = body.get("contents") if isinstance(body, dict) else None
    text = (json.dumps(system) + json.dumps(contents[-1:] if isinstance(contents, list) else "")
            ).lower()
    if "next_speaker" in json.dumps(body).lower():
        return "next_speaker"
    if "title" in text:
        return "title"
    if "summar" in text or "state_snapshot" in text:
        return "summary"
    return "no-tools"


def _wants_json(body: Any) -> bool:
    config = body.get("generationConfig") if isinstance(body, dict) else None
    return isinstance(config, dict) and config.get("responseMimeType") == "application/json"


def _schema(body: Any) -> Any:
    config = body.get("generationConfig") or {}
    return config.get("responseJsonSchema") or config.get("responseSchema") or {}


def _fill(schema: Any, text: str) -> Any:
    """A value matching a JSON schema: the first enum value, ``user`` for a
    ``next_speaker``, ``text`` for other strings."""
    if not isinstance(schema, dict):
        return text
    kind = str(schema.get("type", "object")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties") or {}
        return {key: ("user" if key == "next_speaker" else _fill(sub, text))
                for key, sub in props.items()}
    if kind == "array":
        return [_fill(schema.get("items"), text)]
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    return text


def _response(parts: list[dict[str, Any]], last: bool, tokens: int) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": GEMINI_MODEL,
                           "responseId": f"resp-h{next(_ids):08d}"}
    if last:
        candidate["finishReason"] = "STOP"
        out["usageMetadata"] = {"promptTokenCount": tokens, "candidatesTokenCount": 10,
                                "totalTokenCount": tokens + 10}
    return out


def _stream(parts: list[dict[str, Any]], tokens: int) -> Iterator[bytes]:
    chunks: list[list[dict[str, Any]]] = []
    for part in parts:
        if "text" in part and len(part) == 1:
            words = part["text"].split(" ")
            chunks += [[{"text": w if n == len(words) - 1 else w + " "}]
                       for n, w in enumerate(words)]
        else:
            chunks.append([part])
    for n, chunk in enumerate(chunks):
        data = _response(chunk, n == len(chunks) - 1, tokens)
        yield f"data: {json.dumps(data)}\r\n\r\n".encode()
