"""A Pi coding-agent session (format v3, or the older v1/v2), written in the entries Pi writes."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from actors.upstream.kit import turns as t
from actors.upstream.kit.jsonl import JsonlFile, encode, iso
from actors.upstream.kit.windows import WINDOWS_CWD

__all__ = ["PiSession", "sample", "type_turn"]



class PiSession:
    """Appends to ``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`` as Pi does.

    The first append writes the v3 ``session`` header. Turns map to Pi's
    entries: :class:`~actors.testing.SlashCommand` ``skill:NAME`` is the
    expanded skill block Pi stores, ``model`` a ``model_change`` entry (other
    commands write nothing); :class:`~actors.testing.Interrupt` an assistant
    message that stopped with ``aborted``; :class:`~actors.testing.SubagentRow`
    an extension's ``custom`` entry (Pi has no sub-agents of its own).

    Args:
        path: the session file (its parent must exist).
        session_id: the header's id (default: a new UUID).
        clock: epoch-ms clock stamping each entry (default: a private clock
            moving 1 s per entry).
        cwd: the working directory written into the header (default ``/work``,
            or :data:`~actors.upstream.kit.windows.WINDOWS_CWD` when ``windows``).
        windows: a session recorded on Windows: a drive-letter ``cwd`` (Pi's
            folder for it is ``--C--Users-user-work--``: ``session-manager.js``
            drops a leading separator and turns ``/``, ``\\`` and ``:`` into ``-``);
            lines end ``\n`` as on every platform.
        parent_session: the header's ``parentSession`` (the file a fork or a
            branch started from), or ``None`` (no such field).
        ssa_input: the ``ssaInput`` record our Pi extension adds to every user
            message (``{"v": 1, "source": "rpc", "ui": True}``...), or ``None``
            (no extension). Settable between appends (:attr:`ssa_input`).
        version: the session format Pi wrote (``session-manager.ts`` in
            badlogic/pi-mono): ``3`` (since 2026-01-05, default); ``2``
            (2025-12-30 to 2026-01-05: ``version: 2``, entries already carry
            ``id``/``parentId``); ``1`` (until 2025-12-30: a header with no
            ``version`` but ``provider``/``modelId``/``thinkingLevel``, the
            parent named ``branchedFrom``, entries with no ``id``/``parentId``,
            a compaction's ``firstKeptEntryIndex``).

    Raises:
        ValueError: ``version`` is not 1, 2 or 3.

    Not thread-safe; blocks on the file write.
    """

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None,
                 clock: Callable[[], int] | None = None, cwd: str | None = None,
                 parent_session: str | None = None,
                 ssa_input: Mapping[str, object] | None = None, windows: bool = False,
                 version: int = 3) -> None:
        if version not in (1, 2, 3):
            raise ValueError(f"Pi wrote session formats 1, 2 and 3, not {version!r}")
        self.version = version
        self._file = JsonlFile(path, clock)
        self._entries = 0  # entries written (v1 compactions point at an index)
        self.path: Path = self._file.path
        self.session_id = session_id or str(uuid.uuid4())
        self._cwd = cwd or (WINDOWS_CWD if windows else "/work")
        self._parent_session = parent_session
        self.ssa_input = ssa_input
        """The record added to the user messages written next (``None``: none)."""
        self._clock = clock

    def fork(self, path: str | os.PathLike[str]) -> PiSession:
        """``pi --fork <this file>`` into ``path``, as Pi 0.73.1's ``SessionManager.forkFrom``
        writes it: a new header (new id, stamped now, ``parentSession`` this file), then
        every other line of this file unchanged. Returns the new session's builder
        (same clock; its rows chain on after the copies).

        Raises:
            OSError: a file cannot be read or written.
        """
        copies = self.path.read_bytes().splitlines(keepends=True)[1:]
        forked = PiSession(path, clock=self._clock or self._file.now, cwd=self._cwd,
                           parent_session=str(self.path), ssa_input=self.ssa_input,
                           version=self.version)
        forked._file.path.write_bytes(forked.header_line() + b"".join(copies))
        forked._file.parent = self._file.parent
        return forked

    def append(self, *turns: t.Turn) -> int:
        """Write the entries of ``turns`` in one write; return how many lines.

        Raises:
            TypeError: a turn of an unknown kind (nothing is written).
            OSError: the file cannot be written.
        """
        return self._file.append_turns(turns, self._rows, self._header)

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

    def name(self, name: str) -> int:
        """Append the ``session_info`` entry ``/name NAME`` writes (``appendSessionInfo``,
        the name trimmed). Returns 1. Raises ``OSError``."""
        return self._file.write([self._entry("session_info", name=name.strip())])

    def header_line(self) -> bytes:
        """The header line :meth:`append` writes first into an empty file, as bytes.

        Does not write; moves the builder's clock on by one row.
        """
        return encode([self._header()])

    def _header(self) -> dict[str, Any]:
        header: dict[str, Any] = {"type": "session", "version": self.version,
                                  "id": self.session_id,
                                  "timestamp": iso(self._file.now()), "cwd": self._cwd}
        if self.version == 1:  # v1: no version; the model in the header; branchedFrom
            del header["version"]
            header.update(provider="anthropic", modelId="claude-sonnet-4-5",
                          thinkingLevel="off")
            if self._parent_session is not None:
                header["branchedFrom"] = self._parent_session
        elif self._parent_session is not None:
            header["parentSession"] = self._parent_session
        return header

    def _entry(self, kind: str, **fields: Any) -> dict[str, Any]:
        self._entries += 1
        if self.version == 1:  # v1 entries form a list, not a tree
            return {"type": kind, "timestamp": iso(self._file.now()), **fields}
        entry_id = uuid.uuid4().hex[:8]
        entry = {"type": kind, "id": entry_id, "parentId": self._file.parent,
                 "timestamp": iso(self._file.now()), **fields}
        self._file.parent = entry_id
        return entry

    def _message(self, role: str, content: list[dict[str, Any]], **extra: Any
                 ) -> dict[str, Any]:
        message = self._entry("message", message={"role": role, "content": content, **extra})
        message["message"]["timestamp"] = self._file.now()
        return message

    def _user(self, content: list[dict[str, Any]]) -> dict[str, Any]:
        if self.ssa_input is None:
            return self._message("user", content)
        return self._message("user", content, ssaInput=dict(self.ssa_input))

    def _assistant(self, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return self._message("assistant", content, api="anthropic-messages",
                             provider="anthropic", model="claude-sonnet-4-5",
                             usage={"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0,
                                    "totalTokens": 15},
                             stopReason=stop)

    def _rows(self, turn: t.Turn) -> list[dict[str, Any]]:
        match turn:
            case t.Typed(text=text):
                return [self._user([{"type": "text", "text": text}])]
            case t.Reply(text=text):
                return [self._assistant([{"type": "text", "text": text}], "stop")]
            case t.ToolCall(name=name, input=arguments, call_id=call_id):
                return [self._assistant([{"type": "toolCall", "id": call_id, "name": name,
                                          "arguments": arguments}], "toolUse")]
            case t.ToolResult(call_id=call_id, output=output):
                return [self._message("toolResult", [{"type": "text", "text": output}],
                                      toolCallId=call_id, toolName="bash", isError=False)]
            case t.SlashCommand(name=name, args=args) if name.startswith("skill:"):
                skill = name.removeprefix("skill:")
                text = (f'<skill name="{skill}" location="/home/u/.pi/skills/{skill}/SKILL.md">'
                        f"\n# {skill}\n\nWhat the skill file says.\n</skill>")
                return [self._user([{"type": "text",
                                     "text": text + (f"\n\n{args}" if args else "")}])]
            case t.SlashCommand(name="model", args=args):
                return [self._entry("model_change", provider="anthropic",
                                    modelId=args or "claude-sonnet-4-5")]
            case t.SlashCommand():
                return []  # other built-in commands write no entry
            case t.Interrupt():
                return [self._assistant([], "aborted")]
            case t.Compaction(summary=summary) if self.version == 1:
                return [self._entry("compaction", summary=summary,
                                    firstKeptEntryIndex=max(self._entries, 1),
                                    tokensBefore=1000)]
            case t.Compaction(summary=summary):
                return [self._entry("compaction", summary=summary,
                                    firstKeptEntryId=self._file.parent, tokensBefore=1000)]
            case t.SubagentRow(text=text):
                return [self._entry("custom", customType="subagent", data={"text": text})]
            case t.ImageOnly(count=count):
                return [self._message("user", [{"type": "image", "data": t.PIXEL_PNG,
                                                "mimeType": "image/png"}] * count)]
        raise TypeError(f"not a turn: {turn!r}")


_SAMPLE_SESSION = "019e963d-6bd6-7ade-8a49-256ac3391bdd"


def sample(root: Path) -> tuple[str, str]:
    """Write a sample v3 session under ``root``: ``sessions/--home-user-demo--/<ts>_<id>.jsonl``.

    Returns ``(path, session id)``.

    Raises:
        OSError: it cannot be written.
    """
    path = (root / "sessions" / "--home-user-demo--"
            / f"2026-11-30T08-00-00-000Z_{_SAMPLE_SESSION}.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    PiSession(path, session_id=_SAMPLE_SESSION).append(t.Typed("Summarise the diff"))
    return str(path), _SAMPLE_SESSION


def type_turn(path: str, thread_id: str, text: str) -> None:
    """Append a turn a person typed to the sample session at ``path`` (raises ``OSError``)."""
    PiSession(path, session_id=thread_id).append(t.Typed(text))
