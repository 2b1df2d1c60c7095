"""Upstream transcript lines as bytes, for tests that write partial or odd lines.

The current formats come from the test kit's builders (``actors.testing``),
so the row shapes live in one place. Only the legacy formats the kit does not
write (a Pi v1 header, a Codex 0.34 rollout, a Codex 0.152 paginated rollout)
are spelled out here.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from actors.testing import ClaudeCodeTranscript, PiSession, Reply, Typed

_CLAUDE_SESSION = "ce24e94d-ea12-40cb-9b87-ceb55770af78"
_PI_SESSION = "019e963d-6bd6-7ade-8a49-256ac3391bdd"
_UNUSED = "unused.jsonl"  # the builders' lines() never touch their file


def _ms(timestamp: str) -> int:
    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)


CLAUDE_SESSION = _CLAUDE_SESSION
"""The session id the rows below carry by default: name a ``<uuid>.jsonl`` transcript
after it (a row of another session in such a file is a copy of that session's)."""


def claude_user(text: str, *, timestamp: str | None = None,
                session_id: str = _CLAUDE_SESSION) -> bytes:
    """A Claude Code user row as the CLI writes it for a typed prompt."""
    clock = None if timestamp is None else (lambda: _ms(timestamp))
    return ClaudeCodeTranscript(_UNUSED, session_id=session_id, clock=clock).lines(
        Typed(text))


def claude_assistant(text: str, *, session_id: str = _CLAUDE_SESSION) -> bytes:
    """A Claude Code assistant row."""
    return ClaudeCodeTranscript(_UNUSED, session_id=session_id).lines(Reply(text))


def pi_header(version: int | None = 3) -> bytes:
    """A Pi session header line (``version`` None: a v1 file without the field)."""
    if version == 3:
        return PiSession(_UNUSED, session_id=_PI_SESSION).header_line()
    row: dict[str, object] = {"type": "session", "id": _PI_SESSION,
                              "timestamp": "2026-06-05T05:24:28.246Z", "cwd": "/work"}
    if version is not None:
        row["version"] = version
    return json.dumps(row).encode() + b"\n"


def pi_user(text: str, *, version: int = 3) -> bytes:
    """A Pi user message entry (``version``: the session format, 1-3)."""
    return PiSession(_UNUSED, session_id=_PI_SESSION, version=version).lines(Typed(text))


NOT_A_PI_SESSION = b'{"type":"note","id":"x","timestamp":"2026-06-05T05:24:28.246Z"}\n'
"""A first line that is no Pi ``session`` header: such a file is adopted without a link."""


def codex_paginated_user(text: str, *, ordinal: int = 100) -> bytes:
    """A typed turn in a paginated Codex rollout (0.152-style): the response item and the
    ``item_completed`` ``UserMessage`` event that counts."""
    turn = str(uuid.uuid4())
    item = {"timestamp": "2026-09-02T21:58:24.362Z", "ordinal": ordinal, "type": "response_item",
            "payload": {"type": "message", "id": f"msg_{uuid.uuid4()}", "role": "user",
                        "content": [{"type": "input_text", "text": text}],
                        "internal_chat_message_metadata_passthrough": {
                            "turn_id": turn, "create_time": 1788386304.361661,
                            "content_item_kinds": ["user.text"]}}}
    event = {"timestamp": "2026-09-02T21:58:24.394Z", "ordinal": ordinal + 1,
             "type": "event_msg",
             "payload": {"type": "item_completed",
                         "thread_id": "01a06421-3bf7-7ed2-a618-e42b6c961905", "turn_id": turn,
                         "item": {"type": "UserMessage", "id": str(uuid.uuid4()),
                                  "content": [{"type": "text", "text": text,
                                               "text_elements": []}]},
                         "started_at_ms": 1788386304392, "completed_at_ms": 1788386304393}}
    return json.dumps(item).encode() + b"\n" + json.dumps(event).encode() + b"\n"


def codex_legacy_user(text: str) -> bytes:
    """A typed turn in a legacy Codex rollout (0.34-style): response item + ``user_message``."""
    item = {"timestamp": "2025-11-01T01:03:39.989Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": text}]}}
    event = {"timestamp": "2025-11-01T01:03:39.990Z", "type": "event_msg",
             "payload": {"type": "user_message", "message": text, "kind": "plain"}}
    return json.dumps(item).encode() + b"\n" + json.dumps(event).encode() + b"\n"
