"""A Gemini CLI session file in the rows Gemini CLI 0.61.0 writes, or the whole document
0.38 and earlier wrote (``format="json"``; docs/upstream-gemini.md)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.upstream.common import epoch_ms
from actors.upstream.gemini.kit_document import LAST_DOCUMENT_VERSION, DocumentBuilder
from actors.upstream.kit import turns as t
from actors.upstream.kit.clock import ManualClock
from actors.upstream.kit.jsonl import ROW_STEP_MS, JsonlFile, iso

__all__ = ["GeminiSession", "gemini_logs_json", "sample", "type_turn"]

_CONTEXT = ("<session_context>\nThis is the Gemini CLI. We are setting up the context for our "
            "chat.\n</session_context>")


def gemini_logs_json(*entries: tuple[str, str]) -> bytes:
    """A ``logs.json`` (the TUI's input history) holding ``(session id, query)`` entries."""
    rows = [{"sessionId": sid, "messageId": n, "type": "user", "message": text,
             "timestamp": "2026-01-01T00:00:00.000Z"} for n, (sid, text) in enumerate(entries)]
    return json.dumps(rows, indent=2).encode()


class GeminiSession:
    """Appends to ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` as Gemini CLI does.

    The first append writes the header (``kind`` ``main``, or ``subagent``)
    and the ``$set.messages`` row holding the ``<session_context>`` turn.

    Args:
        path: the session file (its parent must exist).
        session_id: default a new UUID.
        clock: epoch-ms clock (default: a private one moving 1 s per row).
        kind: ``main`` or ``subagent``.
        project: the project root (``projectHash`` is its SHA-256).
        hook_context: a BeforeAgent hook's ``additionalContext`` appended to
            every typed prompt (then ``displayContent`` holds the typed text).
        interactive: ``True`` (default) writes as the TUI does: each ``Typed``
            and ``SlashCommand`` of a ``main`` session is first logged to the
            project's ``logs.json`` (beside ``chats/``; a file outside a
            ``chats`` directory has no project temp dir, so nothing is
            logged), which is what tells a typed prompt. ``False`` writes as
            ``gemini -p`` does: nothing logged, so the session is decided
            program-driven.
        format: ``"jsonl"`` (default: the rows of 0.39 on) or ``"json"``: one
            document ``{sessionId, projectHash, startTime, lastUpdated,
            messages, kind?}`` written whole on every append, as 0.38 and
            earlier did (name the file ``session-*.json``). An existing
            document at ``path`` is loaded and continued.
        version: with ``format="json"``, the Gemini CLI version whose shapes
            are written (default ``0.38.2``): before 0.28 ``content`` is one
            string and there is no ``displayContent``; before 0.31 no ``kind``.
            In a document tool results live in the call (``toolCalls[].result``:
            no ``user`` message), ``Compaction`` is an ``info`` message with no
            text and ``Interrupt`` the ``info`` "Request cancelled." only.
            :attr:`document` gives the builder (``rewind``, ``messages``, ``write``).

    Turns: :class:`~actors.testing.Typed` a ``user`` row; ``Reply`` a
    ``gemini`` row; ``ToolCall`` a ``gemini`` row with ``toolCalls`` written
    twice (Gemini CLI rewrites a message on update); ``ToolResult`` the
    ``user`` row with the ``functionResponse``; ``SlashCommand`` a custom
    command (``.gemini/commands/<name>.toml``: its expansion, with
    ``displayContent`` ``/name args``; built-in commands write no row);
    ``Interrupt`` the ``info`` "Request cancelled."
    row and the history rewrite; ``Compaction`` the ``$set.messages`` holding
    the ``<state_snapshot>``; ``SubagentRow`` a "Please continue." continuation;
    ``ImageOnly`` a ``user`` row of ``inlineData`` image parts and no text
    (``media_only``: it does not count). Not thread-safe; blocks on the file write.
    """

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None,
                 clock: Callable[[], int] | None = None, kind: str = "main",
                 project: str = "/work", hook_context: str | None = None,
                 interactive: bool = True, format: str = "jsonl",
                 version: str | None = None) -> None:
        if format not in ("jsonl", "json"):
            raise ValueError(f"format is 'jsonl' or 'json', not {format!r}")
        self._file = JsonlFile(path, clock if clock is not None else _after_file(Path(path)))
        self.interactive = interactive
        self._dry = False
        self.path: Path = self._file.path
        self.session_id = session_id or str(uuid.uuid4())
        self._kind = kind
        self._hash = hashlib.sha256(project.encode()).hexdigest()
        self._hook = hook_context
        self._history: list[dict[str, Any]] = []
        self._last_prompt: str | None = None
        self.document: DocumentBuilder | None = None
        """The document builder (``format="json"`` only)."""
        if format == "json":
            self.document = DocumentBuilder(
                self.path, session_id=self.session_id, project_hash=self._hash, kind=kind,
                version=version or LAST_DOCUMENT_VERSION, now=self._file.now,
                hook_context=hook_context)
            self.session_id = self.document.session_id

    def append(self, *turns: t.Turn) -> int:
        """Write the rows of ``turns``; return how many lines (a document: how many
        messages were added, the whole document written once).

        Raises:
            TypeError: a turn of an unknown kind (nothing is written).
            OSError: the file cannot be written.
        """
        if self.document is not None:
            added = self.document.apply(turns, self._log)
            self.document.write()
            return added
        return self._file.append_turns(turns, self._rows)

    def header_rows(self) -> list[dict[str, Any]]:
        """The header and the first ``$set.messages`` row (written by the first append)."""
        now = iso(self._file.now())
        header = {"sessionId": self.session_id, "projectHash": self._hash, "startTime": now,
                  "lastUpdated": now, "kind": self._kind}
        context = self._message("user", [{"text": _CONTEXT}])
        self._history.append(context)
        return [header, {"$set": {"messages": [context], "lastUpdated": now}}]

    def lines(self, *turns: t.Turn) -> bytes:
        """The lines :meth:`append` would write for ``turns``, without writing (the header
        rows too when nothing was built yet); ``logs.json`` is not touched either."""
        self._dry = True
        try:
            if self.document is not None:  # the whole document those turns would leave
                saved = copy.deepcopy(self.document.doc)
                try:
                    self.document.apply(turns, self._log)
                    return self.document.encoded()
                finally:
                    self.document.doc = saved
            return self._file.lines(turns, self._rows)
        finally:
            self._dry = False

    def _log(self, text: str) -> None:
        if (self.interactive and not self._dry and self._kind == "main"
                and self.path.parent.name == "chats"):
            _log_query(self.path, self.session_id, text)

    def _message(self, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
        return {"id": str(uuid.uuid4()), "timestamp": iso(self._file.now()), "type": kind,
                "content": content, **extra}

    def _touch(self) -> dict[str, Any]:
        return {"$set": {"lastUpdated": iso(self._file.now())}}

    def _prompt(self, content: list[dict[str, Any]], shown: str | None) -> list[dict[str, Any]]:
        extra: dict[str, Any] = {}
        if self._hook is not None:
            content = [*content, {"text": f"<hook_context>{self._hook}</hook_context>"}]
        text = "".join(p.get("text", "") for p in content)
        if shown is not None and shown != text:
            extra["displayContent"] = [{"text": shown}]
        row = self._message("user", content, **extra)
        self._history.append(row)
        return [row, self._touch()]

    def _rows(self, turn: t.Turn) -> list[dict[str, Any]]:
        rows = self.header_rows() if self._file.is_empty() and not self._history else []
        match turn:
            case t.Typed(text=text):
                self._last_prompt = text
                self._log(text)
                return rows + self._prompt([{"text": text}], text)
            case t.Reply(text=text):
                row = self._message("gemini", text, thoughts=[], model="gemini-2.5-flash")
                self._history.append(row)
                return [*rows, row, self._touch()]
            case t.ToolCall(name=name, input=args, call_id=call_id):
                row = self._message("gemini", "", thoughts=[], model="gemini-2.5-flash")
                done = {**row, "toolCalls": [{"id": call_id, "name": name, "args": args,
                                               "status": "success"}]}
                return [*rows, row, self._touch(), done]
            case t.ToolResult(call_id=call_id, output=output):
                part = {"functionResponse": {"id": call_id, "name": "run_shell_command",
                                             "response": {"output": output}}}
                return [*rows, self._message("user", [part]), self._touch()]
            case t.SlashCommand(name=name, args=args):
                shown = f"/{name} {args}".strip()
                self._last_prompt = shown
                self._log(shown)
                return rows + self._prompt([{"text": f"Expanded {name} command. {args}"}], shown)
            case t.Interrupt():
                return [*rows, self._message("info", "Request cancelled."), self._touch(),
                        {"$set": {"messages": list(self._history)}}]
            case t.Compaction(summary=summary):
                snapshot = self._message("user", [{"text": f"<state_snapshot>{summary}"
                                                   "</state_snapshot>"}])
                self._history = [self._history[0], snapshot]
                return [*rows, {"$set": {"sessionId": self.session_id}},
                        {"$set": {"messages": list(self._history)}},
                        self._message("info", "")]
            case t.ImageOnly(count=count):
                images = [{"inlineData": {"mimeType": "image/png", "data": t.PIXEL_PNG}}
                          for _ in range(count)]
                return rows + self._prompt(images, None)
            case t.SubagentRow():
                extra = {"displayContent": [{"text": self._last_prompt}]} \
                    if self._last_prompt else {}
                return [*rows, self._message("user", [{"text": "Please continue."}], **extra)]
        raise TypeError(f"not a turn: {turn!r}")


def _after_file(path: Path) -> Callable[[], int] | None:
    """A private clock going on after the newest time an existing session file holds
    (``None`` for a new file): a later builder on the same file writes later times,
    as the CLI does (a row older than the file's header reads as copied history)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    stamps = [epoch_ms(v.decode()) for v in re.findall(
        rb'"(?:timestamp|lastUpdated|startTime)"\s*:\s*"([^"]+)"', data)]
    newest = max((s for s in stamps if s is not None), default=None)
    if newest is None:
        return None
    own = ManualClock(newest)
    return lambda: own.advance(ROW_STEP_MS)


_SAMPLE_SESSION = "5d1f0c2e-8a4b-4c6d-9e7f-0a1b2c3d4e5f"
_SAMPLE_PROJECT = "/home/user/demo"


def _log_query(path: Path, session_id: str, text: str) -> None:
    """Add a query to the project's ``logs.json`` as the TUI does (rewritten whole)."""
    logs = path.parent.parent / "logs.json" if path.parent.name == "chats" \
        else path.parent.parent.parent / "logs.json"
    try:
        rows = json.loads(logs.read_bytes())
    except (OSError, ValueError):
        rows = []
    if not isinstance(rows, list):
        rows = []
    rows.append({"sessionId": session_id, "messageId": len(rows), "type": "user",
                 "message": text, "timestamp": "2026-01-01T00:00:00.000Z"})
    logs.write_text(json.dumps(rows, indent=2))


def sample(root: Path) -> tuple[str, str]:
    """Write a sample interactive session under ``root``:
    ``tmp/demo/chats/session-2026-11-30T08-00-<id8>.jsonl`` with its ``logs.json``
    and ``.project_root``.

    Returns ``(path, session id)`` (the id is the file's name, as discovery gives it).

    Raises:
        OSError: it cannot be written.
    """
    project = root / "tmp" / "demo"
    chats = project / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (project / ".project_root").write_text(_SAMPLE_PROJECT)
    path = chats / f"session-2026-11-30T08-00-{_SAMPLE_SESSION[:8]}.jsonl"
    type_turn(str(path), path.stem, "Summarise the diff",
              session=GeminiSession(path, session_id=_SAMPLE_SESSION, project=_SAMPLE_PROJECT))
    return str(path), path.stem


def type_turn(path: str, thread_id: str, text: str, *,
              session: GeminiSession | None = None) -> None:
    """Append a turn a person typed in the TUI to the session file at ``path`` (a
    ``.json`` document: rewritten whole): the query is logged to ``logs.json``
    first, then recorded (raises ``OSError``)."""
    if session is None and path.endswith(".json"):
        session = GeminiSession(path, format="json")
    if session is None:
        with open(path, "rb") as file:
            header = json.loads(file.readline())
        session = GeminiSession(path, session_id=str(header["sessionId"]))
    if not (session.interactive and session.path.parent.name == "chats"):
        _log_query(Path(path), session.session_id, text)  # the builder itself would not
    session.append(t.Typed(text))
