"""A Codex CLI rollout, written in the rows the interactive CLI (0.5x) writes."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.upstream.kit import turns as t
from actors.upstream.kit.jsonl import JsonlFile, encode, iso

__all__ = ["CodexRollout", "sample", "type_turn"]

_PIXEL = "data:image/png;base64," + t.PIXEL_PNG
_REVIEW_PROMPT = ("Review the current code changes (staged, unstaged, and untracked files) "
                  "and provide prioritized findings.")


class CodexRollout:
    """Appends to ``~/.codex/sessions/YYYY/MM/DD/rollout-…-<thread id>.jsonl`` as Codex does.

    The first append writes the ``session_meta`` line of an interactive
    thread (``source: "cli"``; ``source="exec"`` gives a ``codex exec``
    thread, which gets no upstream link).

    Args:
        path: the rollout file (its parent must exist).
        thread_id: the thread id (default: a new UUID).
        clock: epoch-ms clock stamping each row (default: a private clock
            moving 1 s per row).
        source: the thread's ``session_meta`` ``source``.
        cwd: the working directory written into ``session_meta``.

    Turns map to what the CLI writes: :class:`~actors.testing.Typed` a
    user-role response item and the ``user_message`` event that counts;
    :class:`~actors.testing.SlashCommand` ``review`` the ``/review`` preset's
    rows, or with ``args`` the rows of custom review instructions (which a
    person typed, so they count); other built-in commands write nothing;
    :class:`~actors.testing.SubagentRow` the ``<subagent_notification>``
    context item a sub-agent leaves in its parent. Not thread-safe; blocks
    on the file write.
    """

    def __init__(self, path: str | os.PathLike[str], *, thread_id: str | None = None,
                 clock: Callable[[], int] | None = None, source: str = "cli",
                 cwd: str = "/work") -> None:
        self._file = JsonlFile(path, clock)
        self.path: Path = self._file.path
        self.thread_id = thread_id or str(uuid.uuid4())
        self._source = source
        self._cwd = cwd

    def append(self, *turns: t.Turn) -> int:
        """Write the rows of ``turns`` in one write; return how many lines.

        Raises:
            TypeError: a turn of an unknown kind (nothing is written).
            OSError: the file cannot be written.
        """
        return self._file.append_turns(turns, self._rows, self._session_meta)

    def lines(self, *turns: t.Turn) -> bytes:
        """The lines :meth:`append` would write for ``turns``, as bytes, without writing.

        For tests that need the raw bytes: half a line, a line written to
        another file. No header line is included (see :meth:`header_line`)
        and the file is not touched; the builder's clock and row chain move
        on as if the lines had been written.

        Raises:
            TypeError: a turn of an unknown kind.
        """
        return self._file.lines(turns, self._rows)

    def header_line(self) -> bytes:
        """The header line :meth:`append` writes first into an empty file, as bytes.

        Does not write; moves the builder's clock on by one row.
        """
        return encode([self._session_meta()])

    def _session_meta(self) -> dict[str, Any]:
        now = iso(self._file.now())
        return {"timestamp": now, "type": "session_meta", "payload": {
            "id": self.thread_id, "timestamp": now, "cwd": self._cwd,
            "originator": "codex_exec" if self._source == "exec" else "codex_cli_rs",
            "cli_version": "0.57.0", "instructions": None, "source": self._source,
            "model_provider": "openai"}}

    def _line(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": iso(self._file.now()), "type": kind, "payload": payload}

    def _user_item(self, *content: dict[str, Any]) -> dict[str, Any]:
        return self._line("response_item", {"type": "message", "role": "user",
                                            "content": list(content)})

    def _rows(self, turn: t.Turn) -> list[dict[str, Any]]:
        match turn:
            case t.Typed(text=text):
                return [self._user_item({"type": "input_text", "text": text}),
                        self._line("event_msg", {"type": "user_message", "message": text,
                                                 "images": []})]
            case t.Reply(text=text):
                return [self._line("response_item", {
                            "type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": text}]}),
                        self._line("event_msg", {"type": "agent_message", "message": text})]
            case t.ToolCall(name=name, input=arguments, call_id=call_id):
                return [self._line("response_item", {"type": "function_call", "name": name,
                                                     "arguments": json.dumps(arguments),
                                                     "call_id": call_id})]
            case t.ToolResult(call_id=call_id, output=output):
                return [self._line("response_item", {
                    "type": "function_call_output", "call_id": call_id,
                    "output": json.dumps({"output": output, "metadata": {"exit_code": 0}})})]
            case t.SlashCommand(name="review", args=args):
                target = {"type": "custom", "instructions": args} if args else \
                    {"type": "uncommittedChanges"}
                return [self._line("event_msg", {"type": "entered_review_mode",
                                                 "target": target,
                                                 "user_facing_hint": args or "current changes"}),
                        self._line("event_msg", {"type": "user_message",
                                                 "message": args or _REVIEW_PROMPT,
                                                 "images": []}),
                        self._line("event_msg", {"type": "exited_review_mode",
                                                 "review_output": None})]
            case t.SlashCommand():
                return []  # built-in commands (/model, /approvals ...) write no row
            case t.Interrupt():
                return [self._line("event_msg", {"type": "turn_aborted",
                                                 "reason": "interrupted"})]
            case t.Compaction(summary=summary):
                return [self._line("compacted", {"message": summary}),
                        self._line("event_msg", {"type": "context_compacted"})]
            case t.SubagentRow(text=text):
                return [self._user_item({"type": "input_text", "text":
                                         f"<subagent_notification>{text}"
                                         "</subagent_notification>"})]
            case t.ImageOnly(count=count):
                return [self._user_item(*[{"type": "input_image", "image_url": _PIXEL}] * count),
                        self._line("event_msg", {"type": "user_message", "message": "",
                                                 "images": [_PIXEL] * count})]
        raise TypeError(f"not a turn: {turn!r}")


_SAMPLE_THREAD = "01a06421-3bf7-7ed2-a618-e42b6c961905"


def sample(root: Path) -> tuple[str, str]:
    """Write a sample rollout under ``root``: ``sessions/2026/11/30/rollout-…-<id>.jsonl``.

    Returns ``(path, thread id)``.

    Raises:
        OSError: it cannot be written.
    """
    path = (root / "sessions" / "2026" / "11" / "30"
            / f"rollout-2026-11-30T08-00-00-{_SAMPLE_THREAD}.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    CodexRollout(path, thread_id=_SAMPLE_THREAD).append(t.Typed("Run the unit tests"))
    return str(path), _SAMPLE_THREAD


def type_turn(path: str, thread_id: str, text: str) -> None:
    """Append a turn a person typed to the sample rollout at ``path`` (raises ``OSError``)."""
    CodexRollout(path, thread_id=thread_id).append(t.Typed(text))
