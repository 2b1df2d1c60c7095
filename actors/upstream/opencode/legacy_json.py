"""OpenCode's legacy JSON-file store (≤ 1.1): classification for ``ssa classify``.

Before 1.2 OpenCode kept one JSON file per session, message and part under
``storage/`` (upstream-formats.md §4.1). The monitor does not follow these
stores (adopt the SQLite store of a current OpenCode instead), but
``ssa classify --source opencode <storage dir> --session ID`` explains their
turns with the same classifier. Reads files in the caller's thread.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from actors.upstream.common import Unit
from actors.upstream.opencode.classify import classify_messages
from actors.upstream.opencode.rows import (
    OpenCodeMessage,
    _decode_message,
    _decode_part,
    _sort_key,
    is_program_ruleset,
)

__all__ = ["classify_json_session", "is_json_storage", "json_session_ids", "load_json_messages"]


class _SessionFile(msgspec.Struct):
    id: object = None
    parentID: object = None  # noqa: N815 - OpenCode's field name
    permission: object = None


def is_json_storage(path: Path) -> bool:
    """Whether ``path`` is a JSON-era ``storage`` directory (or its parent)."""
    return (path / "message").is_dir() or (path / "storage" / "message").is_dir()


def _root(path: Path) -> Path:
    return path if (path / "message").is_dir() else path / "storage"


def json_session_ids(path: Path) -> list[str]:
    """The ids of the sessions that have messages in the store, sorted (blocks on a listing).

    Raises:
        OSError: the store's ``message`` directory cannot be listed.
    """
    return sorted(entry.name for entry in (_root(path) / "message").iterdir() if entry.is_dir())


def load_json_messages(path: Path, session_id: str) -> tuple[list[OpenCodeMessage], str | None]:
    """Load a session's messages (user parts decoded) and why none of its turns counts.

    Returns:
        ``(messages, refusal)``: the refusal is ``"child_session"`` (its session
        file names a ``parentID``), ``"program_session"`` (its ``permission``
        is ``opencode run``'s ruleset: :func:`~actors.upstream.opencode.rows.is_program_ruleset`)
        or ``None``.

    Raises:
        LookupError: no such session in the store.
        OSError: a file cannot be read.
    """
    root = _root(path)
    message_dir = root / "message" / session_id
    if not message_dir.is_dir():
        raise LookupError(session_id)
    refusal: str | None = None
    for session_file in (root / "session").glob(f"*/{session_id}.json"):
        try:
            info = msgspec.json.decode(session_file.read_bytes(), type=_SessionFile)
        except msgspec.DecodeError:
            continue
        if info.parentID:
            refusal = "child_session"
        elif is_program_ruleset(info.permission):
            refusal = "program_session"
    messages: list[OpenCodeMessage] = []
    for message_file in sorted(message_dir.glob("msg_*.json")):
        raw = message_file.read_bytes()
        message = _decode_message(message_file.stem, 0, raw)
        if message.role == "user":
            parts = []
            for part_file in sorted((root / "part" / message.id).glob("prt_*.json")):
                part = _decode_part(part_file.stem, part_file.read_bytes())
                if part is None:
                    message = msgspec.structs.replace(message, undecodable=True)
                    continue
                parts.append(part)
            message = msgspec.structs.replace(message, parts=tuple(parts))
        messages.append(message)
    messages.sort(key=_sort_key)
    return messages, refusal


def classify_json_session(path: Path, session_id: str) -> list[tuple[str, Unit]]:
    """The monitor's decision for every message of a JSON-era session (from the start)."""
    messages, refusal = load_json_messages(path, session_id)
    return list(classify_messages(messages, last_human_message_id=None,
                                  refusal=refusal).decisions)
