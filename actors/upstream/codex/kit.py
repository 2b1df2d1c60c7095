"""A Codex CLI rollout, written in the rows the interactive CLI writes (0.5x, or 0.169.0's)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from actors.upstream.codex.prompts import CODEX_PROMPTS
from actors.upstream.common import epoch_ms
from actors.upstream.kit import turns as t
from actors.upstream.kit.jsonl import JsonlFile, encode, iso
from actors.upstream.kit.windows import WINDOWS_CWD

__all__ = ["CodexRollout", "CodexTurn", "HookContinuation", "QueuedMessage", "Steer",
           "index_thread_name", "sample",
           "type_turn"]

_PIXEL = "data:image/png;base64," + t.PIXEL_PNG
_REVIEW_PROMPT = ("Review the current code changes (staged, unstaged, and untracked files) "
                  "and provide prioritized findings.")


class QueuedMessage(msgspec.Struct, frozen=True):
    """A message another program queued with ``codex queue`` (0.169.0), run as a turn of
    its own: ``task_started`` with ``turn_trigger: "queue"``, then the rows of a typed
    prompt (does not count). Paginated rollouts only."""

    text: str


class Steer(msgspec.Struct, frozen=True):
    """A prompt a person typed into the running turn (a steer): its ``UserMessage``
    joins the current turn, no ``task_started`` of its own (counts). Paginated only."""

    text: str


class HookContinuation(msgspec.Struct, frozen=True):
    """A Stop hook's ``{"decision": "block", "reason": ...}``: Codex goes on in the same
    turn with ``reason`` as a ``HookPrompt`` item and a ``<hook_prompt>`` message
    (does not count). Paginated only."""

    reason: str


CodexTurn = t.Turn | QueuedMessage | Steer | HookContinuation
"""Any turn :class:`CodexRollout` appends: the shared ones and Codex's own."""


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
        cwd: the working directory written into ``session_meta`` (default ``/work``,
            or :data:`~actors.upstream.kit.windows.WINDOWS_CWD` when ``windows``).
        windows: a session recorded on Windows (``%USERPROFILE%\\.codex\\sessions``):
            a drive-letter ``cwd``; lines end ``\n`` as on every platform.
        forked_from: the thread this one was forked from (``session_meta``
            ``forked_from_id``); see :meth:`fork`.
        paginated: write the rows of Codex 0.169.0 (``history_mode: paginated``):
            each typed turn is a ``task_started`` with ``turn_attribution``
            (``turn_trigger: "user"``), the user-role response item and the
            ``item_completed`` ``UserMessage`` that counts; a reply ends the
            turn (``task_complete``). Default: the 0.57 rows.
        version: the Codex release whose rows to write: ``"0.57"`` (default),
            ``"0.169"`` (the same as ``paginated``) or ``"0.34"`` (fixture
            codex-0.34.0: ``session_meta`` with no ``source``, and a
            ``user_message`` event carrying ``kind: "plain"``).

    Raises:
        ValueError: an unknown ``version``, or ``"0.34"`` with ``paginated``.

    Turns map to what the CLI writes: :class:`~actors.testing.Typed` a
    user-role response item and the ``user_message`` event that counts;
    :class:`~actors.testing.SlashCommand` ``review`` the ``/review`` preset's
    rows, or with ``args`` the rows of custom review instructions (which a
    person typed, so they count); other built-in commands write nothing;
    :class:`~actors.testing.SubagentRow` the ``<subagent_notification>``
    context item a sub-agent leaves in its parent; with ``paginated`` also
    :class:`QueuedMessage`, :class:`Steer` and :class:`HookContinuation`. Not
    thread-safe; blocks on the file write.
    """

    def __init__(self, path: str | os.PathLike[str], *, thread_id: str | None = None,
                 clock: Callable[[], int] | None = None, source: str = "cli",
                 cwd: str | None = None, paginated: bool = False,
                 windows: bool = False, forked_from: str | None = None,
                 version: str = "0.57") -> None:
        if version not in ("0.34", "0.57", "0.169") or (paginated and version == "0.34"):
            raise ValueError(f"no Codex {version!r} rows (paginated={paginated})")
        self._version = "0.169" if paginated else version
        paginated = self._version == "0.169"
        self._file = JsonlFile(path, clock)
        self.path: Path = self._file.path
        self.thread_id = thread_id or str(uuid.uuid4())
        self._source = source
        self._cwd = cwd or (WINDOWS_CWD if windows else "/work")
        self._paginated = paginated
        self._forked_from = forked_from
        self._turn_id: str | None = None
        self.turn_ids: list[str] = []
        """The ids of the turns written so far (paginated rollouts), oldest first."""

    def fork(self, path: str | os.PathLike[str]) -> CodexRollout:
        """``codex fork <this thread>`` into the new rollout ``path``, as Codex 0.169.0 writes it
        (checked with ``codex exec fork ID PROMPT``). Returns the fork's builder (sharing
        this builder's clock); its appends are the fork's own turns.

        * A paginated thread: a new ``session_meta`` naming this thread in
          ``forked_from_id`` and none of this thread's rows (the history is read
          from the parent; the fork's ``ordinal`` goes on from the parent's).
        * A legacy thread (any rollout of an older build, e.g. a file written with
          ``paginated=False`` or a real one): the fork's ``session_meta``
          (``forked_from_id``, ``history_mode: "legacy"``), then every line of this
          rollout, this thread's ``session_meta`` first, re-stamped to the fork's
          instant, then the start of the fork's first turn (``task_started`` and a
          context item whose ``internal_chat_message_metadata_passthrough.create_time``
          is the fork's time).

        Raises:
            OSError: this rollout cannot be read, or the fork cannot be written.
            ValueError: this rollout holds a line that is not JSON.
        """
        fork = CodexRollout(path, clock=self._file.now, source=self._source, cwd=self._cwd,
                            paginated=self._paginated, forked_from=self.thread_id)
        if self._paginated:
            return fork
        meta = fork._session_meta()
        meta["payload"].update({"cli_version": "0.169.0", "history_mode": "legacy"})
        at = meta["timestamp"]
        replayed = [{**json.loads(line), "timestamp": at}
                    for line in self.path.read_text(encoding="utf-8").splitlines() if line]
        started = epoch_ms(at) or 0
        context = fork._line("response_item", {
            "type": "message", "role": "developer",
            "content": [{"type": "input_text", "text": "<permissions instructions>"}],
            "internal_chat_message_metadata_passthrough": {
                "turn_id": None, "create_time": started / 1000,
                "content_item_kinds": ["permissions.instructions"]}})
        fork._file.write([meta, *replayed,
                          fork._line("event_msg", {"type": "task_started"}), context])
        return fork

    def append(self, *turns: CodexTurn) -> int:
        """Write the rows of ``turns`` in one write; return how many lines.

        Raises:
            TypeError: a turn of an unknown kind (nothing is written).
            OSError: the file cannot be written.
        """
        return self._file.append_turns(turns, self._rows, self._session_meta)

    def lines(self, *turns: CodexTurn) -> bytes:
        """The lines :meth:`append` would write for ``turns``, as bytes, without writing.

        For tests that need the raw bytes: half a line, a line written to
        another file. No header line is included (see :meth:`header_line`)
        and the file is not touched; the builder's clock and row chain move
        on as if the lines had been written.

        Raises:
            TypeError: a turn of an unknown kind.
        """
        return self._file.lines(turns, self._rows)

    def rename(self, name: str | None) -> int:
        """Append the row a rename writes to the rollout (newer builds):
        ``event_msg`` ``{"type": "thread_name_updated", "thread_id", "thread_name"}``
        (``None``: no ``thread_name``, a cleared name). Returns 1. Raises ``OSError``."""
        payload: dict[str, Any] = {"type": "thread_name_updated", "thread_id": self.thread_id}
        if name is not None:
            payload["thread_name"] = name
        return self._file.write([self._line("event_msg", payload)])

    def header_line(self) -> bytes:
        """The header line :meth:`append` writes first into an empty file, as bytes.

        Does not write; moves the builder's clock on by one row.
        """
        return encode([self._session_meta()])

    def _session_meta(self) -> dict[str, Any]:
        now = iso(self._file.now())
        payload: dict[str, Any] = {
            "id": self.thread_id, "timestamp": now, "cwd": self._cwd,
            "originator": "codex_exec" if self._source == "exec" else "codex_cli_rs",
            "cli_version": "0.57.0", "instructions": None, "source": self._source,
            "model_provider": "openai"}
        if self._version == "0.34":  # no source, no model_provider yet
            del payload["source"], payload["model_provider"]
            payload["cli_version"] = "0.34.0"
        if self._paginated:
            payload.update({"session_id": self.thread_id, "cli_version": "0.169.0",
                            "originator": "codex_exec" if self._source == "exec"
                            else "codex-tui", "thread_source": "user",
                            "history_mode": "paginated"})
        if self._forked_from is not None:
            payload["forked_from_id"] = self._forked_from
        return {"timestamp": now, "type": "session_meta", "payload": payload}

    def _line(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": iso(self._file.now()), "type": kind, "payload": payload}

    def _user_item(self, *content: dict[str, Any]) -> dict[str, Any]:
        return self._line("response_item", {"type": "message", "role": "user",
                                            "content": list(content)})

    def _start_turn(self, trigger: str) -> dict[str, Any]:
        self._turn_id = str(uuid.uuid4())
        self.turn_ids.append(self._turn_id)
        return self._line("event_msg", {
            "type": "task_started", "turn_attribution": {
                "turn_id": self._turn_id, "turn_trigger": trigger, "parent_turn_id": None,
                "initiating_agent_path": None, "root_turn_id": self._turn_id},
            "turn_id": self._turn_id, "root_turn_id": self._turn_id,
            "collaboration_mode_kind": "default"})

    def _user_message(self, text: str, client_id: str) -> list[dict[str, Any]]:
        item = self._user_item({"type": "input_text", "text": text})
        item["payload"]["internal_chat_message_metadata_passthrough"] = {
            "turn_id": self._turn_id, "content_item_kinds": ["user.text"],
            "content_item_metadata": [{"provenance": {"type": "user"}}]}
        return [item, self._item_completed({
            "type": "UserMessage", "id": str(uuid.uuid4()), "client_id": client_id,
            "content": [{"type": "text", "text": text, "text_elements": []}]})]

    def _item_completed(self, item: dict[str, Any]) -> dict[str, Any]:
        return self._line("event_msg", {"type": "item_completed", "thread_id": self.thread_id,
                                        "turn_id": self._turn_id, "item": item})

    def _paginated_rows(self, turn: CodexTurn) -> list[dict[str, Any]] | None:
        """0.169.0's rows of ``turn``, or ``None`` where they are the 0.57 ones."""
        match turn:
            case t.Typed(text=text):
                return [self._start_turn("user"), *self._user_message(text, str(uuid.uuid4()))]
            case QueuedMessage(text=text):
                return [self._start_turn("queue"), *self._user_message(text, str(uuid.uuid4()))]
            case Steer(text=text):
                return self._user_message(text, str(uuid.uuid4()))
            case HookContinuation(reason=reason):
                run = "stop:0:/home/user/.codex/hooks.json"
                item = self._user_item({"type": "input_text", "text":
                                        f'<hook_prompt hook_run_id="{run}">{reason}</hook_prompt>'})
                item["payload"]["internal_chat_message_metadata_passthrough"] = {
                    "turn_id": self._turn_id, "content_item_kinds": ["hook.prompt"],
                    "content_item_metadata": [{"provenance": {"type": "harness", "hook": True}}]}
                return [item, self._item_completed({
                    "type": "HookPrompt", "id": f"msg_{uuid.uuid4()}",
                    "fragments": [{"text": reason, "hookRunId": run}]})]
            case t.Reply(text=text):
                return [self._item_completed({"type": "AgentMessage", "id": f"msg_{uuid.uuid4()}",
                                              "content": [{"type": "Text", "text": text}]}),
                        self._line("response_item", {
                            "type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": text}]}),
                        self._line("event_msg", {"type": "task_complete",
                                                 "turn_id": self._turn_id,
                                                 "last_agent_message": text})]
        return None

    def _rows(self, turn: CodexTurn) -> list[dict[str, Any]]:
        if isinstance(turn, t.SlashCommand) and turn.name == "init":
            return self._rows(t.Typed(CODEX_PROMPTS.prompts[0].text))  # /init's fixed text
        if self._paginated:
            rows = self._paginated_rows(turn)
            if rows is not None:
                return rows
        elif isinstance(turn, QueuedMessage | Steer | HookContinuation):
            raise TypeError(f"{type(turn).__name__} needs a paginated rollout")
        match turn:
            case t.Typed(text=text) if self._version == "0.34":
                return [self._user_item({"type": "input_text", "text": text}),
                        self._line("event_msg", {"type": "user_message", "message": text,
                                                 "kind": "plain"})]
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


def index_thread_name(codex_home: str | os.PathLike[str], thread_id: str, name: str,
                      updated_at: str = "2026-01-01T00:00:00Z") -> None:
    """Append ``{"id", "thread_name", "updated_at"}`` to ``codex_home/session_index.jsonl``,
    as every Codex build that names threads does (``append_thread_name``).

    Raises:
        OSError: the index cannot be written.
    """
    row = {"id": thread_id, "thread_name": name, "updated_at": updated_at}
    with (Path(codex_home) / "session_index.jsonl").open("ab") as handle:
        handle.write(encode([row]))


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
