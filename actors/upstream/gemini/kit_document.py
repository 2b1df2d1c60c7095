"""A Gemini CLI session *document* (``session-*.json``, 0.38 and before) as the CLI wrote it.

Used by :class:`actors.upstream.gemini.kit.GeminiSession` with
``format="json"``; docs/upstream-gemini.md names the source of each shape.
The whole document is written again on every change (``JSON.stringify(conv,
null, 2)``, not atomically), as ``ChatRecordingService.writeConversation`` did.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.upstream.kit import turns as t
from actors.upstream.kit.jsonl import iso

__all__ = ["DocumentBuilder", "version_tuple"]

_CONTENT_PARTS = (0, 28)
"""From 0.28 (gemini-cli@bb6a336ca9) ``content`` is a part list; ``displayContent`` exists."""
_KIND = (0, 31)
"""From 0.31 (gemini-cli@d2d345f41a) the document has ``kind``."""
LAST_DOCUMENT_VERSION = "0.38.2"
"""The last Gemini CLI release that wrote session documents (0.39.0 writes JSONL)."""


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.37.1"`` -> ``(0, 37, 1)`` (pure; a non-numeric part ends it)."""
    parts: list[int] = []
    for piece in version.lstrip("v").split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits or not piece.startswith(digits):
            break
        parts.append(int(digits))
    return tuple(parts)


class DocumentBuilder:
    """The document of one session, kept in memory and written whole.

    Args:
        path: the ``.json`` file; an existing document there is loaded (so a new
            builder goes on with it).
        session_id, project_hash, kind: the header fields.
        version: the Gemini CLI version whose shapes are written (``>= 0.28``
            content parts and ``displayContent``; ``>= 0.31`` ``kind``).
        now: the epoch-ms clock stamping messages.
        hook_context: a BeforeAgent hook's text appended to each prompt.

    Not thread-safe; blocks on the file write.
    """

    def __init__(self, path: Path, *, session_id: str, project_hash: str, kind: str,
                 version: str, now: Callable[[], int], hook_context: str | None) -> None:
        self.path = path
        self._now = now
        self._parts = version_tuple(version) >= _CONTENT_PARTS
        self._hook = hook_context
        self._last_prompt: str | None = None
        try:
            loaded = json.loads(path.read_bytes())
        except (OSError, ValueError):
            loaded = None
        if isinstance(loaded, dict) and isinstance(loaded.get("messages"), list):
            self.doc: dict[str, Any] = loaded
            return
        start = iso(now())
        self.doc = {"sessionId": session_id, "projectHash": project_hash, "startTime": start,
                    "lastUpdated": start, "messages": []}
        if version_tuple(version) >= _KIND:
            self.doc["kind"] = kind

    @property
    def session_id(self) -> str:
        """The document's ``sessionId``."""
        return str(self.doc["sessionId"])

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages, in order (mutable: tests rewrite them, then :meth:`write`)."""
        messages: list[dict[str, Any]] = self.doc["messages"]
        return messages

    def apply(self, turns: tuple[t.Turn, ...], log: Callable[[str], None]) -> int:
        """Add the messages of ``turns`` (``log`` is called with each typed query first);
        return how many messages were added. Nothing is written.

        Raises:
            TypeError: a turn of an unknown kind (the document is left as it was).
        """
        before = copy.deepcopy(self.doc)
        count = len(self.messages)
        logged: list[str] = []
        try:
            for turn in turns:
                self._turn(turn, logged.append)
        except BaseException:
            self.doc = before
            raise
        for query in logged:
            log(query)
        return len(self.messages) - count

    def encoded(self) -> bytes:
        """The document as the CLI wrote it (``JSON.stringify(conversation, null, 2)``)."""
        return json.dumps(self.doc, indent=2, ensure_ascii=False).encode()

    def write(self) -> None:
        """Stamp ``lastUpdated`` and write the whole document (raises ``OSError``)."""
        self.doc["lastUpdated"] = iso(self._now())
        self.path.write_bytes(self.encoded())

    def rewind(self, index: int) -> None:
        """``/rewind``: drop the message at ``index`` and every later one, and write."""
        del self.messages[index:]
        self.write()

    def _message(self, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
        row = {"id": str(uuid.uuid4()), "timestamp": iso(self._now()), "type": kind,
               "content": content, **extra}
        self.messages.append(row)
        return row

    def _user(self, parts: list[dict[str, Any]], shown: str | None) -> None:
        if self._hook is not None:
            parts = [*parts, {"text": f"<hook_context>{self._hook}</hook_context>"}]
        text = "".join(p.get("text", "") for p in parts)
        if not self._parts:  # before 0.28: partListUnionToString of the sent parts
            self._message("user", text)
            return
        extra = {"displayContent": [{"text": shown}]} if shown is not None and shown != text \
            else {}
        self._message("user", parts, **extra)

    def _gemini(self, content: str) -> dict[str, Any]:
        return self._message("gemini", content, thoughts=[], tokens=None,
                             model="gemini-2.5-flash")

    def _turn(self, turn: t.Turn, log: Callable[[str], None]) -> None:
        match turn:
            case t.Typed(text=text):
                self._last_prompt = text
                log(text)
                self._user([{"text": text}], text)
            case t.Reply(text=text):
                self._gemini(text)
            case t.ToolCall(name=name, input=args, call_id=call_id):
                last = self.messages[-1] if self.messages else None
                if last is None or last.get("type") != "gemini":
                    last = self._gemini("")
                last.setdefault("toolCalls", []).append(
                    {"id": call_id, "name": name, "args": args, "status": "executing",
                     "timestamp": iso(self._now())})
            case t.ToolResult(call_id=call_id, output=output):
                for message in reversed(self.messages):  # the result lives in the call
                    for call in message.get("toolCalls") or ():
                        if call.get("id") == call_id:
                            call["status"] = "success"
                            call["result"] = [{"functionResponse": {
                                "id": call_id, "name": call.get("name"),
                                "response": {"output": output}}}]
            case t.SlashCommand(name=name, args=args):
                shown = f"/{name} {args}".strip()
                self._last_prompt = shown
                log(shown)
                self._user([{"text": f"Expanded {name} command. {args}"}], shown)
            case t.Interrupt():
                self._message("info", "Request cancelled.")
            case t.Compaction():
                self._message("info", "")  # the history stays; the notice has no text
            case t.ImageOnly(count=count):
                images = [{"inlineData": {"mimeType": "image/png", "data": t.PIXEL_PNG}}
                          for _ in range(count)]
                self._message("user", images if self._parts else "")
            case t.SubagentRow():
                extra = {"displayContent": [{"text": self._last_prompt}]} \
                    if self._last_prompt and self._parts else {}
                self._message("user", [{"text": "Please continue."}] if self._parts
                              else "Please continue.", **extra)
            case _:
                raise TypeError(f"not a turn: {turn!r}")
