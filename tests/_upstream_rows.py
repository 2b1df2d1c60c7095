"""Synthetic upstream transcript rows in each tool's real format (for tests)."""

from __future__ import annotations

import json
import uuid


def claude_user(text: str, *, timestamp: str = "2026-07-13T10:05:00.000Z") -> bytes:
    """A Claude Code user row as the CLI writes it for a typed prompt."""
    row = {
        "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/work",
        "sessionId": "ce24e94d-ea12-40cb-9b87-ceb55770af78", "version": "2.1.37",
        "gitBranch": "main", "type": "user", "message": {"role": "user", "content": text},
        "uuid": str(uuid.uuid4()), "timestamp": timestamp,
    }
    return json.dumps(row).encode() + b"\n"


def claude_assistant(text: str) -> bytes:
    """A Claude Code assistant row."""
    row = {
        "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/work",
        "sessionId": "ce24e94d-ea12-40cb-9b87-ceb55770af78", "version": "2.1.37",
        "type": "assistant", "uuid": str(uuid.uuid4()), "timestamp": "2026-07-13T10:06:00.000Z",
        "message": {"role": "assistant", "type": "message",
                    "content": [{"type": "text", "text": text}]},
    }
    return json.dumps(row).encode() + b"\n"


def pi_header(version: int | None = 3) -> bytes:
    """A Pi session header line (``version`` None: a v1 file without the field)."""
    row: dict[str, object] = {"type": "session", "id": "019e963d-6bd6-7ade-8a49-256ac3391bdd",
                              "timestamp": "2026-06-05T05:24:28.246Z", "cwd": "/work"}
    if version is not None:
        row["version"] = version
    return json.dumps(row).encode() + b"\n"


def pi_user(text: str) -> bytes:
    """A Pi v3 user message entry."""
    row = {"type": "message", "id": uuid.uuid4().hex[:8], "parentId": None,
           "timestamp": "2026-06-05T05:24:28.254Z",
           "message": {"role": "user", "content": [{"type": "text", "text": text}],
                       "timestamp": 1780637068253}}
    return json.dumps(row).encode() + b"\n"


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
