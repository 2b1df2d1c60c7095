"""A Claude Code session transcript, written in the rows Claude Code 2.1 writes."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from actors.upstream.kit import turns as t
from actors.upstream.kit.jsonl import JsonlFile, iso
from actors.upstream.kit.windows import WINDOWS_CWD

__all__ = ["ClaudeCodeTranscript", "sample", "type_turn"]

def _epoch_ms(value: object) -> int:
    """A row's ISO ``timestamp`` as epoch ms (0 when it has none)."""
    if not isinstance(value, str):
        return 0
    return int(datetime.fromisoformat(value).timestamp() * 1000)


_COMPACTED = ("This session is being continued from a previous conversation that ran out of "
              "context. The conversation is summarized below:\n")


class ClaudeCodeTranscript:
    """Appends to ``<projects>/<slug>/<session id>.jsonl`` as Claude Code does.

    Args:
        path: the transcript file (created on the first append; its parent
            must exist). Claude Code keeps it under
            ``~/.claude/projects/<slug of the working directory>/``.
        session_id: the session's id (default: the file name's stem).
        clock: epoch-ms clock stamping each row (default: a private
            :class:`~actors.testing.ManualClock` that moves 1 s per row).
        cwd: the working directory written into each row (default ``/work``, or
            :data:`~actors.upstream.kit.windows.WINDOWS_CWD` when ``windows``).
        windows: a session recorded on Windows: a drive-letter ``cwd`` with
            backslashes (Claude Code's JSONL lines end ``\n`` there too: Node
            writes what it is given; the project folder is the cwd with every
            character outside ``[A-Za-z0-9]`` as ``-``: ``C--Users-user-work``).
        entrypoint: the ``entrypoint`` written into each row (``None``: none,
            as 2.1.37 writes; ``"cli"``, ``"sdk-cli"``, ``"claude-desktop"``...).
        prompt_source: the ``promptSource`` of a :class:`~actors.testing.Typed`
            row (``None``: none). With either option a typed row also gets
            ``origin: {"kind": "human"}``, as 2.1.328 and Claude Desktop write.
        version: the ``version`` written into each row.
        queue_operations: write the Agent SDK's ``queue-operation`` rows
            (``enqueue`` with the text, then ``dequeue``) before each
            :class:`~actors.testing.Typed` row, as ``claude -p``, the Agent SDK
            and Claude Desktop do (fixture ``cc-2.1.152-sdk-cli-redacted.jsonl``).

    Each :meth:`append` writes whole lines with one ``write`` call, as the
    tool's append-only writer does, so a monitor never sees half a turn.
    Not thread-safe: append from one thread. Blocks on the file write.
    """

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None,
                 clock: Callable[[], int] | None = None, cwd: str | None = None,
                 entrypoint: str | None = None, prompt_source: str | None = None,
                 version: str = "2.1.37", windows: bool = False,
                 queue_operations: bool = False) -> None:
        self._file = JsonlFile(path, clock)
        self.path: Path = self._file.path
        self.session_id = session_id or self.path.stem
        self._cwd = cwd or (WINDOWS_CWD if windows else "/work")
        self._entrypoint, self._prompt_source, self._version = entrypoint, prompt_source, version
        self._queue_operations = queue_operations

    def injected(self, text: str, *, origin_kind: str | None, prompt_source: str | None = None,
                 **extra: Any) -> int:
        """Append a user row someone other than the person wrote: ``text`` with
        ``origin: {"kind": origin_kind}`` (none when ``None``) and ``promptSource``
        (default: the transcript's), plus any ``extra`` fields. Returns 1.

        E.g. a Desktop task notification (``origin_kind="task-notification"``), a
        message from another session (``"peer"``, ``<cross-session-message …>``).

        Raises:
            OSError: the file cannot be written.
        """
        fields: dict[str, Any] = dict(extra)
        if origin_kind is not None:
            fields["origin"] = {"kind": origin_kind}
        source = prompt_source if prompt_source is not None else self._prompt_source
        if source is not None:
            fields["promptSource"] = source
        return self._file.write([self._user(text, **fields)])

    def copy_of(self, earlier: Path, *, keep_session_ids: bool = False) -> int:
        """Start this transcript as Claude Code does for a conversation continued
        under a new session id: its ``mode``, ``permission-mode`` and ``atis-latch``
        rows, then every row of ``earlier`` that has a ``uuid``, with ``uuid`` and
        ``timestamp`` kept. Returns how many lines were written.

        Args:
            earlier: the earlier session's transcript (it may live in another
                project folder; it may be deleted afterwards).
            keep_session_ids: ``False`` (default): as 2.1.328 does
                (``--continue --fork-session``, ``--resume ID --fork-session``):
                ``sessionId`` rewritten to this session's, a copied assistant
                row naming the earlier session in ``requestSessionId``.
                ``True``: as Claude Desktop's engine does when it reopens or
                forks a conversation (anthropics/claude-code#95234): every
                copy keeps the earlier ``sessionId``.

        The transcript's own clock (when no clock was given) moves past the
        copies, as the real session's rows come after them.

        Raises:
            OSError: a file cannot be read or written.
            ValueError: ``earlier`` holds a line that is not JSON.
        """
        rows: list[dict[str, Any]] = [
            {"type": "mode", "mode": "normal", "sessionId": self.session_id},
            {"type": "permission-mode", "permissionMode": "default", "sessionId": self.session_id},
            {"type": "atis-latch", "atis": "", "sessionId": self.session_id}]
        rows += self._copies(earlier, keep_session_ids=keep_session_ids)
        return self._file.write(rows)

    def desktop_continuation(self, earlier: Path, text: str) -> int:
        """Claude Desktop continues the conversation of ``earlier`` in this new file with
        the prompt ``text``: the Agent SDK's ``queue-operation`` rows for the prompt
        (``enqueue`` with its text, ``dequeue``), then every row of ``earlier`` with
        ``uuid``, ``timestamp`` and ``sessionId`` kept, then the typed prompt row
        (``entrypoint`` and ``promptSource`` as this transcript's, e.g.
        ``claude-desktop`` / ``sdk``, with ``origin.kind: "human"``). Returns how
        many lines were written.

        Raises:
            OSError: a file cannot be read or written.
            ValueError: ``earlier`` holds a line that is not JSON.
        """
        copies = self._copies(earlier, keep_session_ids=True)
        queued = self._queue_operations_of(text)
        typed = [row for row in self._rows(t.Typed(text)) if row["type"] != "queue-operation"]
        return self._file.write(queued + copies + typed)

    def _copies(self, earlier: Path, *, keep_session_ids: bool) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        parent: str | None = None
        newest = 0
        for line in earlier.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if not isinstance(row, dict) or "uuid" not in row:
                continue
            copy = {**row, "parentUuid": parent}
            if not keep_session_ids:
                copy["sessionId"] = self.session_id
                if row.get("type") == "assistant":
                    copy["requestSessionId"] = row.get("sessionId")
            rows.append(copy)
            parent = str(row["uuid"])
            newest = max(newest, _epoch_ms(row.get("timestamp")))
        self._file.parent = parent
        self._file.catch_up(newest)
        return rows

    def _queue_operations_of(self, text: str) -> list[dict[str, Any]]:
        enqueue = {"type": "queue-operation", "operation": "enqueue",
                   "timestamp": iso(self._file.now()), "sessionId": self.session_id,
                   "content": text}
        dequeue = {"type": "queue-operation", "operation": "dequeue",
                   "timestamp": iso(self._file.now()), "sessionId": self.session_id}
        return [enqueue, dequeue]

    def prompt_command(self, name: str, expansion: str, *, meta: bool = False) -> int:
        """The person runs a built-in prompt command (``/init``): Claude Code writes the
        command row, then the prompt it expands to as a user row (``isMeta`` in
        current builds, a plain row in older ones). Returns 2.

        Raises:
            OSError: the file cannot be written.
        """
        command = self._user(f"<command-message>{name} is analyzing your codebase\u2026"
                             f"</command-message>\n<command-name>/{name}</command-name>")
        extra: dict[str, Any] = {"isMeta": True} if meta else {}
        return self._file.write([command, self._user([{"type": "text", "text": expansion}],
                                                     **extra)])

    def append(self, *turns: t.Turn) -> int:
        """Write the rows of ``turns`` in one write; return how many lines.

        Raises:
            TypeError: a turn of an unknown kind (nothing is written).
            OSError: the file cannot be written.
        """
        return self._file.append_turns(turns, self._rows)

    def rename(self, title: str, *, session_id: str | None = None) -> int:
        """Append the row ``/rename TITLE`` writes: ``{"type": "custom-title",
        "customTitle": title, "sessionId": ...}`` (default: this session's id).
        Returns 1. Raises ``OSError`` when the file cannot be written."""
        return self._file.write([{"type": "custom-title", "customTitle": title,
                                  "sessionId": session_id or self.session_id}])

    def summary(self, text: str) -> int:
        """Append a ``{"type": "summary", "summary": text, "leafUuid": ...}`` row, the
        one-line description older builds write for ``claude --resume``. Returns 1.
        Raises ``OSError`` when the file cannot be written."""
        return self._file.write([{"type": "summary", "summary": text,
                                  "leafUuid": self._file.parent or str(uuid.uuid4())}])

    def lines(self, *turns: t.Turn) -> bytes:
        """The lines :meth:`append` would write for ``turns``, as bytes, without writing.

        For tests that need the raw bytes: half a line, a line written to
        another file. The file is not touched; the builder's clock and row
        chain move on as if the lines had been written (Claude Code writes
        no header line).

        Raises:
            TypeError: a turn of an unknown kind.
        """
        return self._file.lines(turns, self._rows)

    def _row(self, kind: str, message: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
        row_id = str(uuid.uuid4())
        row: dict[str, Any] = {
            "parentUuid": self._file.parent, "isSidechain": False, "userType": "external",
            "cwd": self._cwd, "sessionId": self.session_id, "version": self._version,
            "gitBranch": "main", "type": kind}
        if self._entrypoint is not None:
            row["entrypoint"] = self._entrypoint
        if message is not None:
            row["message"] = message
        row.update(extra, uuid=row_id, timestamp=iso(self._file.now()))
        self._file.parent = row_id
        return row

    def _user(self, content: str | list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return self._row("user", {"role": "user", "content": content}, **extra)

    def _assistant(self, block: dict[str, Any]) -> dict[str, Any]:
        return self._row("assistant", {
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message", "role": "assistant", "content": [block], "stop_reason": None,
            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}},
            requestId=f"req_{uuid.uuid4().hex[:24]}")

    def _rows(self, turn: t.Turn) -> list[dict[str, Any]]:
        match turn:
            case t.Typed(text=text):
                queued = self._queue_operations_of(text) if self._queue_operations else []
                if self._entrypoint is None and self._prompt_source is None:
                    return [*queued, self._user(text)]
                typed: dict[str, Any] = {"origin": {"kind": "human"}}
                if self._prompt_source is not None:
                    typed["promptSource"] = self._prompt_source
                return [*queued, self._user(text, **typed)]
            case t.Reply(text=text):
                return [self._assistant({"type": "text", "text": text})]
            case t.ToolCall(name=name, input=arguments, call_id=call_id):
                return [self._assistant({"type": "tool_use", "id": call_id, "name": name,
                                         "input": arguments})]
            case t.ToolResult(call_id=call_id, output=output):
                return [self._user([{"tool_use_id": call_id, "type": "tool_result",
                                     "content": output, "is_error": False}],
                                   toolUseResult={"stdout": output, "stderr": "",
                                                  "interrupted": False})]
            case t.SlashCommand(name=name, args=args):
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
            case t.Interrupt():
                return [self._user([{"type": "text", "text": "[Request interrupted by user]"}])]
            case t.Compaction(summary=summary):
                boundary = self._row("system", None, subtype="compact_boundary",
                                     content="Conversation compacted", isMeta=False,
                                     compactMetadata={"trigger": "manual", "preTokens": 1000})
                return [boundary, self._user(_COMPACTED + summary, isCompactSummary=True,
                                             isVisibleInTranscriptOnly=True)]
            case t.SubagentRow(text=text):
                row = self._user(text)
                row["isSidechain"] = True
                row["agentId"] = uuid.uuid4().hex[:8]
                return [row]
            case t.ImageOnly(count=count):
                return [self._user([{"type": "image", "source": {
                    "type": "base64", "media_type": "image/png", "data": t.PIXEL_PNG}}] * count)]
        raise TypeError(f"not a turn: {turn!r}")


_SAMPLE_SESSION = "4f1c8a52-7d1e-4e8b-9a54-2c6f0b3d9e11"
_SAMPLE_CWD = "/home/user/demo"


def sample(root: Path) -> tuple[str, str]:
    """Write a sample session under ``root``: ``projects/-home-user-demo/<id>.jsonl``.

    One typed turn and its reply. Returns ``(path, session id)``.

    Raises:
        OSError: it cannot be written.
    """
    path = root / "projects" / "-home-user-demo" / f"{_SAMPLE_SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    ClaudeCodeTranscript(path, session_id=_SAMPLE_SESSION, cwd=_SAMPLE_CWD).append(
        t.Typed("Add a changelog entry for 1.2"), t.Reply("Done."))
    return str(path), _SAMPLE_SESSION


def type_turn(path: str, thread_id: str, text: str) -> None:
    """Append a turn a person typed to the sample session at ``path`` (raises ``OSError``)."""
    ClaudeCodeTranscript(path, session_id=thread_id, cwd=_SAMPLE_CWD).append(t.Typed(text))
