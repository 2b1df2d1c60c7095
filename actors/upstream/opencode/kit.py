"""An OpenCode (1.18) session, written into an ``opencode.db`` store as OpenCode writes it."""

from __future__ import annotations

import json
import os
import secrets
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from actors.upstream.fixed_prompts import ARGS, REST
from actors.upstream.kit import turns as t
from actors.upstream.kit.clock import ManualClock
from actors.upstream.kit.jsonl import ROW_STEP_MS, encode_json
from actors.upstream.kit.windows import WINDOWS_CWD
from actors.upstream.opencode.kit_store import SCHEMA, Store, newest_id_value
from actors.upstream.opencode.prompts import OPENCODE_PROMPTS

__all__ = ["OpenCodeTranscript", "sample", "type_turn"]

VERSION = "1.18.33"
"""The OpenCode version the builder's sessions and schema follow."""

_PROJECT = "3fbdf7f8bd3883037d80b445136aff4a357eaa3a"
_MODEL = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
_RUN_PERMISSION = [{"permission": p, "pattern": "*", "action": "deny"}
                   for p in ("question", "plan_enter", "plan_exit")]
_CHILD_PERMISSION = [{"permission": "task", "pattern": "*", "action": "deny"}]
_SUMMARIZE = "Summarize the task tool output above and continue with your task."
_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_ID_MASK = (1 << 48) - 1


class OpenCodeTranscript:
    """One OpenCode session in an ``opencode.db`` store, appended to as OpenCode 1.18 does.

    The store (``~/.local/share/opencode/opencode.db``) is created with
    OpenCode's schema for the tables it writes when the file does not exist
    yet; a session row and its ``event_sequence`` row are added on
    construction. Each :meth:`append` is one SQLite transaction holding the
    message rows, their part rows and the session's advanced event
    sequence, as OpenCode commits them, so a monitor never sees half a turn.

    How the turns are stored (formats doc §4.2-§4.3):

    * :class:`~actors.testing.Typed`: a user message with one ``text`` part.
    * :class:`~actors.testing.Reply`: an assistant message with
      ``step-start``, ``text`` and ``step-finish`` parts.
    * :class:`~actors.testing.ToolCall`: an assistant message whose ``tool``
      part is ``running``; :class:`~actors.testing.ToolResult` completes that
      part in place (OpenCode updates the part row; no new message).
    * :class:`~actors.testing.SlashCommand`: ``model`` with
      ``"provider/model"`` (or ``"model"``) args switches the model of later
      user messages and writes nothing (the TUI keeps it); ``init`` sends the
      ``/init`` template (the worktree and ``args`` filled in) as a text part;
      any other name is a sub-agent command
      (``subtask: true``): a user message whose only part is ``subtask``, the
      parent's ``task`` tool call, the child session it ran in, and the
      synthetic "Summarize the task tool output…" user message.
    * :class:`~actors.testing.Interrupt`: an assistant message that stopped
      with ``MessageAbortedError`` (Esc in the TUI).
    * :class:`~actors.testing.Compaction`: ``/compact``: a user message with a
      ``compaction`` part and the ``summary: true`` assistant message.
    * :class:`~actors.testing.SubagentRow`: the model's ``task`` tool call and
      the child session (``parent_id`` set) whose first user message is the
      text.
    * :class:`~actors.testing.ImageOnly`: pasted images: ``[Image 1]`` …
      placeholders, each covered by a ``file`` part's ``source.text`` span.

    Args:
        path: the ``opencode.db`` file (created if missing; its parent must
            exist).
        session_id: the session id (default: a new ``ses_…`` id in
            OpenCode's descending shape).
        parent_id: makes this a sub-agent's child session of that session
            (its turns never count).
        run: the session ``opencode run`` creates (its permission ruleset
            denies ``question``; its turns never count).
        title: the session title.
        directory: the project directory written into the rows (default ``/work``,
            or :data:`~actors.upstream.kit.windows.WINDOWS_CWD` when ``windows``).
        windows: a session recorded on Windows: a drive-letter directory with
            backslashes. The store itself is the same SQLite file (in
            ``%USERPROFILE%\\.local\\share\\opencode``: OpenCode takes its data
            directory from ``xdg-basedir``, which falls back to
            ``~/.local/share`` on every platform).
        clock: epoch-ms clock stamping each row (default: a private
            :class:`~actors.testing.ManualClock` moving 1 s per row).

    Attributes:
        path: the store file.
        session_id: what to pass as ``AdoptRequest.thread_id``.

    Raises:
        apsw.Error: the store cannot be created or written.
        ValueError: ``session_id`` already exists in the store.

    Not thread-safe; blocks on SQLite (busy timeout 5 s) in the caller's thread.
    """

    path: Path
    session_id: str
    _clock: Callable[[], int] | None
    _own: ManualClock | None
    _counter: int
    _last_ms: int
    _floor: int
    _directory: str
    _model: dict[str, str]
    _last_user: str | None
    _calls: dict[str, tuple[str, str, str]]  # call id -> part, message, session

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None,
                 parent_id: str | None = None, run: bool = False,
                 title: str = "A session", directory: str | None = None,
                 clock: Callable[[], int] | None = None, windows: bool = False) -> None:
        self._setup(Path(path), clock,
                    directory=directory or (WINDOWS_CWD if windows else "/work"))
        now = self._now()
        self.session_id = session_id or self._id("ses", now, descending=True)
        permission = _RUN_PERMISSION if run else _CHILD_PERMISSION if parent_id else None
        with self._connection() as conn, conn:
            for statement in SCHEMA:
                conn.execute(statement)
            if conn.execute("SELECT 1 FROM session WHERE id = ?", (self.session_id,)).get:
                raise ValueError(f"session {self.session_id!r} already exists in {self.path}")
            self._create_session(conn, self.session_id, parent_id, title, permission, now)

    @classmethod
    def resume(cls, path: str | os.PathLike[str], session_id: str, *,
               clock: Callable[[], int] | None = None) -> OpenCodeTranscript:
        """Append to a session that already exists in a store (another builder's, or a copy
        of a real ``opencode.db``).

        Args:
            path: the store file.
            session_id: the session's id.
            clock: epoch-ms clock for the new rows (default: a private clock
                starting 1 s after the store's newest row and moving 1 s per row, so
                new messages sort after every existing one).

        Returns:
            A builder whose :meth:`append` adds to that session (with the model of
            its newest user message).

        Raises:
            LookupError: the store has no such session.
            apsw.Error: the store cannot be read.
        """
        builder = cls.__new__(cls)
        builder._setup(Path(path), clock, directory="/work")
        with builder._connection() as conn:
            row = conn.execute("SELECT directory FROM session WHERE id = ?", (session_id,)).get
            if row is None:
                raise LookupError(f"no OpenCode session {session_id!r} in {builder.path}")
            builder._directory = str(row)
            newest = conn.execute("SELECT max(time_created) FROM message").get
            last_user = conn.execute(
                "SELECT id, data FROM message WHERE session_id = ?"
                " AND json_extract(data, '$.role') = 'user'"
                " ORDER BY time_created DESC, id DESC LIMIT 1", (session_id,)).get
        if builder._own is not None and isinstance(newest, int):
            builder._own.set(max(builder._own.now, newest))
        if isinstance(last_user, tuple):
            builder._last_user = str(last_user[0])
            model = json.loads(str(last_user[1])).get("model")
            if isinstance(model, dict) and {"providerID", "modelID"} <= model.keys():
                builder._model = {"providerID": str(model["providerID"]),
                                  "modelID": str(model["modelID"])}
        builder.session_id = session_id
        return builder

    def fork(self) -> OpenCodeTranscript:
        """``opencode --session <this> --fork``, as OpenCode 1.18.33's ``Session.fork``
        writes it: a new session (created now, title ``<title> (fork #1)``, no
        parent), then every message of this one with a new ascending id and its
        data unchanged (the original ``time.created``), each part with a new id.
        Returns the new session's builder (same clock; same store).

        Raises:
            apsw.Error: the store cannot be read or written.
        """
        forked = OpenCodeTranscript.__new__(OpenCodeTranscript)
        forked._setup(self.path, self._clock, directory=self._directory)
        forked._own, forked._model = self._own, dict(self._model)
        now = forked._now()
        forked.session_id = forked._id("ses", now, descending=True)
        with self._connection() as conn, conn:
            forked._floor = newest_id_value(conn)
            title = conn.execute("SELECT title FROM session WHERE id = ?",
                                 (self.session_id,)).get
            forked._create_session(conn, forked.session_id, None, f"{title} (fork #1)", None,
                                   now)
            messages = list(conn.execute(
                "SELECT id, time_created, data FROM message WHERE session_id = ?"
                " ORDER BY time_created, id", (self.session_id,)))
            for old_id, created, data in messages:
                new_id = forked._id("msg", forked._now())
                conn.execute("INSERT INTO message (id, session_id, time_created, time_updated,"
                             " data) VALUES (?, ?, ?, ?, ?)",
                             (new_id, forked.session_id, created, created, data))
                forked._advance(conn, forked.session_id)
                if '"role":"user"' in str(data):
                    forked._last_user = new_id
                for (part,) in list(conn.execute(
                        "SELECT data FROM part WHERE message_id = ? ORDER BY id", (old_id,))):
                    forked._part(conn, forked.session_id, new_id, json.loads(str(part)))
        return forked

    def append(self, *turns: t.Turn) -> int:
        """Write ``turns`` in one transaction; return how many message rows were added.

        Raises:
            TypeError: a turn of an unknown kind (nothing is written).
            ValueError: a :class:`~actors.testing.ToolResult` names no running
                call of this session (nothing is written).
            apsw.Error: the store cannot be written.
        """
        saved = (dict(self._calls), dict(self._model), self._last_user, self._counter,
                 self._last_ms, self._floor)
        written = 0
        try:
            with self._connection() as conn, conn:
                self._floor = max(self._floor, newest_id_value(conn))
                for turn in turns:
                    written += self._write(conn, turn)
        except BaseException:  # rolled back: the builder forgets it too
            (self._calls, self._model, self._last_user, self._counter, self._last_ms,
             self._floor) = saved
            raise
        return written

    def _setup(self, path: Path, clock: Callable[[], int] | None, *, directory: str) -> None:
        self.path = path
        self._clock = clock
        self._own = ManualClock() if clock is None else None
        self._counter = 0
        self._last_ms = -1
        self._floor = 0  # the newest message id's value in the store: new ids go past it
        self._directory = directory
        self._model = dict(_MODEL)
        self._last_user = None
        self._calls = {}

    # --- one turn ----------------------------------------------------------

    def _write(self, conn: apsw.Connection, turn: t.Turn) -> int:
        match turn:
            case t.Typed(text=text):
                self._user(conn, self.session_id, [{"type": "text", "text": text}])
                return 1
            case t.Reply(text=text):
                self._reply(conn, self.session_id, text)
                return 1
            case t.ToolCall(name=name, input=arguments, call_id=call_id):
                message = self._assistant(conn, self.session_id, finish="tool-calls")
                part = self._part(conn, self.session_id, message, {
                    "type": "tool", "tool": name, "callID": call_id,
                    "state": {"status": "running", "input": arguments,
                              "time": {"start": self._now()}}})
                self._calls[call_id] = (part, message, self.session_id)
                return 1
            case t.ToolResult(call_id=call_id, output=output):
                self._complete(conn, call_id, output)
                return 0
            case t.SlashCommand(name="model", args=args):
                provider, _, model = args.rpartition("/")
                if model:
                    self._model = {"providerID": provider or self._model["providerID"],
                                   "modelID": model}
                return 0
            case t.SlashCommand(name="init", args=args):
                template = OPENCODE_PROMPTS.prompts[0].text  # 1.18.33's /init
                text = template.replace(REST, self._directory).replace(ARGS, args)
                self._user(conn, self.session_id, [{"type": "text", "text": text}])
                return 1
            case t.SlashCommand(name=name, args=args):
                return self._subtask_command(conn, name, args)
            case t.Interrupt():
                self._assistant(conn, self.session_id, error={
                    "name": "MessageAbortedError",
                    "data": {"message": "The operation was aborted."}})
                return 1
            case t.Compaction(summary=summary):
                self._user(conn, self.session_id, [{"type": "compaction", "auto": False}])
                message = self._assistant(conn, self.session_id, mode="compaction",
                                          summary=True)
                self._part(conn, self.session_id, message, {"type": "text", "text": summary})
                return 2
            case t.SubagentRow(text=text):
                return self._task(conn, "general", "Sub-task", text, command=None)
            case t.ImageOnly(count=count):
                parts: list[dict[str, Any]] = []
                placeholders = [f"[Image {n}]" for n in range(1, count + 1)]
                parts.append({"type": "text", "text": " ".join(placeholders)})
                start = 0
                for n, placeholder in enumerate(placeholders, 1):
                    end = start + len(placeholder)
                    parts.append({"type": "file", "mime": "image/png",
                                  "filename": f"pasted-{n}.png",
                                  "url": f"data:image/png;base64,{t.PIXEL_PNG}",
                                  "source": {"text": {"value": placeholder, "start": start,
                                                      "end": end},
                                             "type": "file", "path": f"pasted-{n}.png"}})
                    start = end + 1
                self._user(conn, self.session_id, parts)
                return 1
        raise TypeError(f"not a turn: {turn!r}")

    def _subtask_command(self, conn: apsw.Connection, name: str, args: str) -> int:
        """``/name args`` for a command with ``subtask: true`` (run by a sub-agent)."""
        prompt = args or f"Run the {name} command."
        self._user(conn, self.session_id, [{
            "type": "subtask", "agent": "general", "description": f"/{name}", "command": name,
            "model": dict(self._model), "prompt": prompt}])
        written = 1 + self._task(conn, "general", f"/{name}", prompt, command=name)
        self._user(conn, self.session_id, [{"type": "text", "text": _SUMMARIZE,
                                            "synthetic": True}])
        return written + 1

    def _task(self, conn: apsw.Connection, agent: str, description: str, prompt: str, *,
              command: str | None) -> int:
        """The parent's ``task`` tool call and the child session it ran; messages written."""
        now = self._now()
        child = self._id("ses", now, descending=True)
        self._create_session(conn, child, self.session_id,
                             f"{description} (@{agent} subagent)", _CHILD_PERMISSION, now)
        call = self._assistant(conn, self.session_id, finish="tool-calls")
        arguments: dict[str, Any] = {"description": description, "prompt": prompt,
                                     "subagent_type": agent}
        if command is not None:
            arguments["command"] = command
        asked = self._user(conn, child, [{"type": "text", "text": prompt}], agent=agent)
        self._reply(conn, child, "Done.", parent=asked)
        self._part(conn, self.session_id, call, {
            "type": "tool", "tool": "task", "callID": f"call_{secrets.token_hex(8)}",
            "state": {"status": "completed", "input": arguments, "title": description,
                      "output": f'<task id="{child}" state="completed">\n<task_result>\nDone.\n'
                                "</task_result>\n</task>",
                      "metadata": {"parentSessionId": self.session_id, "sessionId": child},
                      "time": {"start": now, "end": self._now()}}})
        return 3

    def _complete(self, conn: apsw.Connection, call_id: str, output: str) -> None:
        found = self._calls.pop(call_id, None)
        if found is None:
            raise ValueError(f"no running tool call {call_id!r} in this session")
        part_id, message_id, session_id = found
        row = conn.execute("SELECT data FROM part WHERE id = ?", (part_id,)).get
        data = json.loads(str(row))
        now = self._now()
        data["state"] = {"status": "completed", "input": data["state"]["input"],
                         "output": output, "title": data["tool"],
                         "metadata": {"output": output, "truncated": False},
                         "time": {"start": data["state"]["time"]["start"], "end": now}}
        conn.execute("UPDATE part SET data = ?, time_updated = ? WHERE id = ?",
                     (encode_json(data), now, part_id))
        self._part(conn, session_id, message_id, _step_finish("tool-calls"))

    # --- rows --------------------------------------------------------------

    def _create_session(self, conn: apsw.Connection, session_id: str, parent_id: str | None,
                        title: str, permission: list[dict[str, str]] | None, now: int) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO project (id, worktree, vcs, time_created, time_updated,"
            " sandboxes) VALUES (?, ?, 'git', ?, ?, '[]')",
            (_PROJECT, self._directory, now, now))
        conn.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
            " permission, agent, model, time_created, time_updated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, _PROJECT, parent_id, "quiet-harbor", self._directory, title, VERSION,
             None if permission is None else json.dumps(permission),
             "general" if parent_id else "build",
             json.dumps({"id": self._model["modelID"], "providerID": self._model["providerID"],
                         "variant": "default"}), now, now))
        conn.execute("INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, 0)",
                     (session_id,))

    def _user(self, conn: apsw.Connection, session_id: str, parts: list[dict[str, Any]], *,
              agent: str = "build") -> str:
        now = self._now()
        message = self._message(conn, session_id, now, {
            "role": "user", "time": {"created": now}, "agent": agent,
            "model": dict(self._model), "summary": {"diffs": []}})
        for part in parts:
            self._part(conn, session_id, message, part)
        if session_id == self.session_id:
            self._last_user = message
        return message

    def _assistant(self, conn: apsw.Connection, session_id: str, *, finish: str = "stop",
                   mode: str = "build", summary: bool = False,
                   error: dict[str, Any] | None = None, parent: str | None = None) -> str:
        now = self._now()
        data: dict[str, Any] = {
            "parentID": parent or self._last_user, "role": "assistant", "mode": mode, "agent": mode,
            "path": {"cwd": self._directory, "root": self._directory}, "cost": 0,
            "tokens": {"total": 110, "input": 100, "output": 10, "reasoning": 0,
                       "cache": {"write": 0, "read": 0}},
            "modelID": self._model["modelID"], "providerID": self._model["providerID"],
            "time": {"created": now, "completed": now}, "finish": finish}
        if summary:
            data["summary"] = True
        if error is not None:
            data["error"] = error
            del data["finish"]
        message = self._message(conn, session_id, now, data)
        self._part(conn, session_id, message, {"type": "step-start"})
        return message

    def _reply(self, conn: apsw.Connection, session_id: str, text: str, *,
               parent: str | None = None) -> str:
        message = self._assistant(conn, session_id, parent=parent)
        now = self._now()
        self._part(conn, session_id, message, {"type": "text", "text": text,
                                               "time": {"start": now, "end": now}})
        self._part(conn, session_id, message, _step_finish("stop"))
        return message

    def _message(self, conn: apsw.Connection, session_id: str, now: int,
                 data: dict[str, Any]) -> str:
        message_id = self._id("msg", now)
        conn.execute("INSERT INTO message (id, session_id, time_created, time_updated, data)"
                     " VALUES (?, ?, ?, ?, ?)", (message_id, session_id, now, now,
                                                 encode_json(data)))
        self._advance(conn, session_id)
        return message_id

    def _part(self, conn: apsw.Connection, session_id: str, message_id: str,
              data: dict[str, Any]) -> str:
        now = self._now()
        part_id = self._id("prt", now)
        conn.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated,"
                     " data) VALUES (?, ?, ?, ?, ?, ?)",
                     (part_id, message_id, session_id, now, now,
                      encode_json(data)))
        self._advance(conn, session_id)
        return part_id

    @staticmethod
    def _advance(conn: apsw.Connection, session_id: str) -> None:
        """One event per row written (``message.updated`` / ``message.part.updated``)."""
        conn.execute("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?",
                     (session_id,))

    # --- ids and time --------------------------------------------------------

    def _now(self) -> int:
        if self._own is not None:
            return self._own.advance(ROW_STEP_MS)
        assert self._clock is not None
        return self._clock()

    def _id(self, prefix: str, now: int, *, descending: bool = False) -> str:
        """OpenCode's id: 12 hex digits of the low 48 bits of ``ms * 0x1000 +
        counter`` (the counter starts at 1 in each ms; inverted for sessions, so
        newer sort first), then 14 random base62 characters.

        Message and part ids also go past the newest message id in the store,
        as a running OpenCode's do while its clock stands still or moves on
        (a frozen test clock, a second builder on the same store, ``resume``).
        """
        self._counter = self._counter + 1 if now == self._last_ms else 1
        self._last_ms = now
        value = now * 0x1000 + self._counter
        if descending:
            value = ~value & _ID_MASK
        else:
            value = max(value, self._floor + 1)
            self._floor = value
        tail = "".join(secrets.choice(_BASE62) for _ in range(14))
        return f"{prefix}_{value & _ID_MASK:012x}{tail}"

    def _connection(self) -> Store:
        return Store(self.path)


def _step_finish(reason: str) -> dict[str, Any]:
    return {"type": "step-finish", "reason": reason,
            "tokens": {"total": 110, "input": 100, "output": 10, "reasoning": 0,
                       "cache": {"write": 0, "read": 0}}, "cost": 0}


_SAMPLE_SESSION = "ses_dd45483e1ffey2Pb2WIeXKDqPz"


def sample(root: Path) -> tuple[str, str]:
    """Write a sample OpenCode store under ``root``: ``opencode.db`` with one session.

    Returns ``(path, session id)``.

    Raises:
        OSError, apsw.Error: it cannot be written.
    """
    path = root / "opencode.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    OpenCodeTranscript(path, session_id=_SAMPLE_SESSION, title="Demo session",
                       directory="/home/user/demo").append(t.Typed("Explain the build failure"))
    return str(path), _SAMPLE_SESSION


def type_turn(path: str, thread_id: str, text: str) -> None:
    """Append a typed turn to a session of the store at ``path``.

    Raises:
        OSError, apsw.Error: it cannot be written; LookupError: no such session.
    """
    OpenCodeTranscript.resume(path, thread_id).append(t.Typed(text))
