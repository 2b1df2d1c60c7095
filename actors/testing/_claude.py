"""A Claude Code session transcript, written in the rows Claude Code 2.1 writes."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from actors.testing._clock import ManualClock
from actors.testing._turns import (
    Compaction,
    ImageOnly,
    Interrupt,
    Reply,
    SlashCommand,
    SubagentRow,
    ToolCall,
    ToolResult,
    Turn,
    Typed,
)

__all__ = ["ClaudeCodeTranscript"]

_PIXEL = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAA"
          "AABJRU5ErkJggg==")  # a 1x1 PNG
_COMPACTED = ("This session is being continued from a previous conversation that ran out of "
              "context. The conversation is summarized below:\n")


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class ClaudeCodeTranscript:
    """Appends to ``<projects>/<slug>/<session id>.jsonl`` as Claude Code does.

    Args:
        path: the transcript file (created on the first append; its parent
            must exist). Claude Code keeps it under
            ``~/.claude/projects/<slug of the working directory>/``.
        session_id: the session's id (default: the file name's stem).
        clock: epoch-ms clock stamping each row (default: a
            :class:`~actors.testing.ManualClock` that moves 1 s per row).
        cwd: the working directory written into each row.

    Each :meth:`append` writes whole lines with one ``write`` call, as the
    tool's append-only writer does, so a monitor never sees half a turn.
    Not thread-safe: append from one thread. Blocks on the file write.
    """

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None,
                 clock: Callable[[], int] | None = None, cwd: str = "/work") -> None:
        self.path = Path(path)
        self.session_id = session_id or self.path.stem
        self._clock = clock or ManualClock()
        self._cwd = cwd
        self._parent: str | None = None

    def append(self, *turns: Turn) -> int:
        """Write the rows of ``turns``, in order; return how many lines were written.

        Raises:
            TypeError: a turn of an unknown kind.
            OSError: the file cannot be written.
        """
        rows: list[dict[str, Any]] = []
        for turn in turns:
            rows += self._rows(turn)
        data = b"".join(json.dumps(row, ensure_ascii=False).encode() + b"\n" for row in rows)
        with self.path.open("ab") as handle:
            handle.write(data)
        return len(rows)

    def _row(self, kind: str, message: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
        row_id = str(uuid.uuid4())
        row: dict[str, Any] = {
            "parentUuid": self._parent, "isSidechain": False, "userType": "external",
            "cwd": self._cwd, "sessionId": self.session_id, "version": "2.1.37",
            "gitBranch": "main", "type": kind}
        if message is not None:
            row["message"] = message
        row.update(extra, uuid=row_id, timestamp=_iso(self._now()))
        self._parent = row_id
        return row

    def _now(self) -> int:
        clock = self._clock
        now = clock()
        if isinstance(clock, ManualClock):
            clock.advance(1000)
        return now

    def _user(self, content: str | list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return self._row("user", {"role": "user", "content": content}, **extra)

    def _assistant(self, block: dict[str, Any]) -> dict[str, Any]:
        return self._row("assistant", {
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message", "role": "assistant", "content": [block], "stop_reason": None,
            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}},
            requestId=f"req_{uuid.uuid4().hex[:24]}")

    def _rows(self, turn: Turn) -> list[dict[str, Any]]:
        match turn:
            case Typed(text=text):
                return [self._user(text)]
            case Reply(text=text):
                return [self._assistant({"type": "text", "text": text})]
            case ToolCall(name=name, input=arguments, call_id=call_id):
                return [self._assistant({"type": "tool_use", "id": call_id, "name": name,
                                         "input": arguments})]
            case ToolResult(call_id=call_id, output=output):
                return [self._user([{"tool_use_id": call_id, "type": "tool_result",
                                     "content": output, "is_error": False}],
                                   toolUseResult={"stdout": output, "stderr": "",
                                                  "interrupted": False})]
            case SlashCommand(name=name, args=args):
                return [
                    self._user("<local-command-caveat>Caveat: The messages below were "
                               "generated by the user while running local commands. DO NOT "
                               "respond to these messages or otherwise consider them in your "
                               "response unless the user explicitly asks you to."
                               "</local-command-caveat>", isMeta=True),
                    self._user(f"<command-name>/{name}</command-name>\n            "
                               f"<command-message>{name}</command-message>\n            "
                               f"<command-args>{args}</command-args>"),
                    self._user(f"<local-command-stdout>{name} done</local-command-stdout>")]
            case Interrupt():
                return [self._user([{"type": "text", "text": "[Request interrupted by user]"}])]
            case Compaction(summary=summary):
                boundary = self._row("system", None, subtype="compact_boundary",
                                     content="Conversation compacted", isMeta=False,
                                     compactMetadata={"trigger": "manual", "preTokens": 1000})
                return [boundary, self._user(_COMPACTED + summary, isCompactSummary=True,
                                             isVisibleInTranscriptOnly=True)]
            case SubagentRow(text=text):
                row = self._user(text)
                row["isSidechain"] = True
                row["agentId"] = uuid.uuid4().hex[:8]
                return [row]
            case ImageOnly(count=count):
                return [self._user([{"type": "image", "source": {
                    "type": "base64", "media_type": "image/png", "data": _PIXEL}}] * count)]
        raise TypeError(f"not a turn: {turn!r}")
