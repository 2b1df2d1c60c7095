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
