"""A Qwen Code session file in the records Qwen Code 0.24.4 writes (docs/upstream-qwen.md)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.upstream.kit import turns as t
from actors.upstream.kit.jsonl import JsonlFile, iso
from actors.upstream.kit.windows import WINDOWS_CWD

__all__ = ["QwenSession", "sample", "type_turn"]


class QwenSession:
    """Appends to ``~/.qwen/projects/<cwd slug>/chats/<session id>.jsonl`` as Qwen Code does.

    Args:
        path: the session file (its parent must exist).
        session_id: default the file's name without ``.jsonl`` (Qwen Code names
            the file after the session), else a new UUID.
        clock: epoch-ms clock (default: a private one moving 1 s per row).
        cwd: the ``cwd`` of every record (default ``/work``, or with ``windows``
            :data:`~actors.upstream.kit.windows.WINDOWS_CWD`).
        windows: a session recorded on Windows (a drive-letter ``cwd``; the
            project folder Qwen Code names after it is lower-cased there, see
            :func:`~actors.upstream.qwen.classify.qwen_project_slug`).
        interactive: write the ``<session id>.runtime.json`` sidecar the
            interactive UI writes (``False``: a ``qwen -p`` run).

    Turns: ``Typed`` a ``user`` record (and the ``attribution_snapshot`` /
    ``file_history_snapshot`` system records); ``Reply`` an ``assistant``
    record; ``ToolCall`` an ``assistant`` record with a ``functionCall``;
    ``ToolResult`` a ``tool_result`` record; ``SlashCommand`` the two
    ``system`` ``slash_command`` records (invocation, result); ``Interrupt``
    nothing (Qwen Code writes no record for it); ``Compaction`` a
    ``chat_compression`` system record; ``SubagentRow`` a ``user``
    ``notification`` record (provenance ``system``); ``ImageOnly`` a typed
    ``user`` record of ``inlineData`` image parts and no text (``empty``: it
    does not count). Not thread-safe; blocks
    on the file write.
    """

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None,
                 clock: Callable[[], int] | None = None, cwd: str | None = None,
                 interactive: bool = True, windows: bool = False) -> None:
        self._file = JsonlFile(path, clock)
        self.path: Path = self._file.path
        stem = self.path.name.removesuffix(".jsonl")
        self.session_id = session_id or (stem if stem != self.path.name and stem
                                         else str(uuid.uuid4()))
        self._cwd = cwd if cwd is not None else (WINDOWS_CWD if windows else "/work")
        self._interactive = interactive
        self._prompts = 0

    def append(self, *turns: t.Turn) -> int:
        """Write the records of ``turns``; return how many lines.

        Raises:
            TypeError: a turn of an unknown kind (nothing is written).
            OSError: the file cannot be written.
        """
        self._sidecar()
        return self._file.append_turns(turns, self._rows)

    def _sidecar(self) -> None:
        """Write the interactive UI's ``runtime.json`` sidecar once (when interactive)."""
        if self._interactive:
            sidecar = self.path.with_name(f"{self.session_id}.runtime.json")
            if not sidecar.exists():
                sidecar.write_text(json.dumps({"schema_version": 1, "pid": 1,
                                               "session_id": self.session_id,
                                               "work_dir": self._cwd}))

    def lines(self, *turns: t.Turn) -> bytes:
        """The lines :meth:`append` would write for ``turns``, without writing."""
        return self._file.lines(turns, self._rows)

    def prompt(self, display: str, *, model_text: str | None = None,
               hook_context: str | None = None, files: dict[str, str] | None = None) -> int:
        """Append one typed prompt the way 0.24.4 records it with a hook, ``@`` files or
        a custom command (seen under the harness, docs/upstream-qwen.md).

        Args:
            display: what the person typed (``systemPayload.displayText``).
            model_text: the text sent instead (a custom command's expansion).
            hook_context: a ``UserPromptSubmit`` hook's ``additionalContext``: one more
                part, wrapped in ``<qwen:user-prompt-submit-context>``, and
                ``systemPayload.hookContext``.
            files: ``@`` references, name to content: an ``at_command`` system record
                first, then the content parts after the text.

        Returns:
            How many lines were written.

        Raises:
            OSError: the file cannot be written.
        """
        rows: list[dict[str, Any]] = []
        parts: list[dict[str, str]] = [{"text": model_text if model_text is not None
                                        else display}]
        if files:
            rows.append(self._system("at_command", {"filesRead": list(files),
                                                    "status": "success", "userText": display}))
            parts.append({"text": "\n--- Content from referenced files ---"})
            for name, content in files.items():
                parts += [{"text": f"\nContent from {name}:\n"}, {"text": content}]
            parts.append({"text": "\n--- End of content ---"})
        payload: dict[str, str] = {"displayText": display}
        if hook_context is not None:
            parts.append({"text": "<qwen:user-prompt-submit-context>\n"
                                  f"{hook_context}\n</qwen:user-prompt-submit-context>"})
            payload["hookContext"] = hook_context
        rows.append(self._record("user", "real_user", message={"role": "user", "parts": parts},
                                 systemPayload=payload))
        self._sidecar()
        return self._file.write(rows)

    def init_command(self, context_file: str = "QWEN.md") -> int:
        """Append what 0.24.4 writes when the person runs ``/init``: the ``slash_command``
        records (``invocation`` with ``sentToModel``, ``result``), then the command's
        fixed prompt as a ``real_user`` record (seen on the real CLI, harness
        ``tests/test_agents_fixed_prompts.py``). Returns how many lines were written.

        Raises:
            OSError: the file cannot be written.
        """
        text = ("\nYou are Qwen Code, an interactive CLI agent. Analyze the current directory"
                f" and generate a comprehensive {context_file} file to be used as instructional"
                " context for future interactions.\n\n**Analysis Process:**\n\n1.  **Initial"
                " Exploration:**\n    *   Start by listing the files and directories.\n\n"
                f"**Final Output:**\n\nWrite the complete content to the `{context_file}` file."
                " The output must be well-formatted Markdown.\n")
        rows = [self._system("slash_command", {"phase": "invocation", "rawCommand": "/init",
                                               "sentToModel": True,
                                               "hiddenInvocation": False}),
                self._system("slash_command", {"phase": "result", "rawCommand": "/init",
                                               "outputHistoryItems": [{
                                                   "type": "info",
                                                   "text": f"Empty {context_file} created. Now "
                                                           "analyzing the project to populate "
                                                           "it."}]}),
                self._record("user", "real_user",
                             message={"role": "user", "parts": [{"text": text}]})]
        self._sidecar()
        return self._file.write(rows)

    def agent_call(self, prompt: str, call_id: str, *, background: bool = False,
                   result: str = "done") -> int:
        """Append the parent's side of an ``agent`` tool call: the call, its result and,
        for a background agent, the ``notification`` record its completion writes.

        Returns:
            How many lines were written.

        Raises:
            OSError: the file cannot be written.
        """
        call = {"functionCall": {"id": call_id, "name": "agent", "args": {
            "description": "a sub-agent", "prompt": prompt, "subagent_type": "general-purpose",
            "run_in_background": background}}}
        output = "Background agent launched successfully." if background else result
        response = {"functionResponse": {"id": call_id, "name": "agent",
                                         "response": {"output": output}}}
        rows = [self._record("assistant", "assistant_output",
                             message={"role": "model", "parts": [call]}),
                self._record("tool_result", "tool_result",
                             message={"role": "user", "parts": [response]},
                             toolCallResult={"callId": call_id, "status": "success"})]
        if background:
            note = (f"<task-notification>\n<status>completed</status>\n<result>{result}"
                    "</result>\n</task-notification>")
            rows.append(self._record("user", "system", subtype="notification",
                                     message={"role": "user", "parts": [{"text": note}]}))
        self._sidecar()
        return self._file.write(rows)

    def branch(self, path: str | os.PathLike[str], session_id: str | None = None
               ) -> QwenSession:
        """``/branch``: copy every record into a new session file as
        ``SessionService.forkSession`` does (new ``sessionId``, ``forkedFrom`` naming the
        source record), with the new session's ``runtime.json`` sidecar.

        Returns:
            The new session, to append to.

        Raises:
            OSError: a file cannot be read or written.
        """
        new = QwenSession(path, session_id=session_id, cwd=self._cwd,
                          interactive=self._interactive)
        rows = []
        for line in self.path.read_bytes().splitlines():
            record = json.loads(line)
            rows.append({**record, "sessionId": new.session_id, "parentUuid": new._file.parent,
                         "forkedFrom": {"sessionId": self.session_id,
                                        "messageUuid": record["uuid"]}})
            new._file.parent = record["uuid"]
        new._sidecar()
        new._file.write(rows)
        return new

    def _record(self, kind: str, provenance: str, **extra: Any) -> dict[str, Any]:
        row = {"uuid": str(uuid.uuid4()), "parentUuid": self._file.parent,
               "sessionId": self.session_id, "timestamp": iso(self._file.now()), "type": kind,
               "provenance": provenance, "cwd": self._cwd, "version": "0.24.4", **extra}
        self._file.parent = row["uuid"]
        return row

    def _system(self, subtype: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self._record("system", "system", subtype=subtype, systemPayload=payload)

    def _rows(self, turn: t.Turn) -> list[dict[str, Any]]:
        match turn:
            case t.Typed(text=text):
                self._prompts += 1
                return [self._record("user", "real_user",
                                     message={"role": "user", "parts": [{"text": text}]}),
                        self._system("attribution_snapshot", {"snapshot": {
                            "type": "attribution-snapshot", "version": 1, "surface": "cli",
                            "promptCount": self._prompts}}),
                        self._system("file_history_snapshot", {"snapshots": []})]
            case t.Reply(text=text):
                return [self._record("assistant", "assistant_output",
                                     message={"role": "model", "parts": [{"text": text}]})]
            case t.ToolCall(name=name, input=args, call_id=call_id):
                call = {"functionCall": {"id": call_id, "name": name, "args": args}}
                return [self._record("assistant", "assistant_output",
                                     message={"role": "model", "parts": [call]})]
            case t.ToolResult(call_id=call_id, output=output):
                part = {"functionResponse": {"id": call_id, "name": "run_shell_command",
                                             "response": {"output": output}}}
                return [self._record("tool_result", "tool_result",
                                     message={"role": "user", "parts": [part]},
                                     toolCallResult={"callId": call_id, "status": "success"})]
            case t.SlashCommand(name=name, args=args):
                raw = f"/{name} {args}".strip()
                return [self._system("slash_command", {"phase": "invocation", "rawCommand": raw,
                                                       "sentToModel": False}),
                        self._system("slash_command", {"phase": "result", "rawCommand": raw})]
            case t.Interrupt():
                return []
            case t.Compaction(summary=summary):
                return [self._system("chat_compression", {"summary": summary})]
            case t.ImageOnly(count=count):
                images = [{"inlineData": {"mimeType": "image/png", "data": t.PIXEL_PNG}}
                          for _ in range(count)]
                return [self._record("user", "real_user",
                                     message={"role": "user", "parts": images})]
            case t.SubagentRow(text=text):
                return [self._record("user", "system", subtype="notification",
                                     message={"role": "user", "parts": [{"text": text}]},
                                     systemPayload={"displayText": text})]
        raise TypeError(f"not a turn: {turn!r}")


_SAMPLE_SESSION = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


def sample(root: Path) -> tuple[str, str]:
    """Write a sample interactive session under ``root``:
    ``projects/-home-user-demo/chats/<id>.jsonl`` with its ``runtime.json`` sidecar.

    Returns ``(path, session id)``.

    Raises:
        OSError: it cannot be written.
    """
    path = root / "projects" / "-home-user-demo" / "chats" / f"{_SAMPLE_SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    QwenSession(path, session_id=_SAMPLE_SESSION, cwd="/home/user/demo").append(
        t.Typed("Summarise the diff"))
    return str(path), _SAMPLE_SESSION


def type_turn(path: str, thread_id: str, text: str) -> None:
    """Append a prompt a person typed in the interactive UI to the session at ``path``
    (raises ``OSError``)."""
    QwenSession(path, session_id=thread_id).append(t.Typed(text))
