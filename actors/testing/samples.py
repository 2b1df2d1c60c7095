"""Small sample sessions in each tool's on-disk format, for ``ssa demo`` and tests.

The rows are the test kit's (:mod:`actors.testing`), which writes each
tool's real format (upstream-formats.md): a Claude Code project JSONL, a
Codex rollout, a Pi v3 session file and an OpenCode 1.18 SQLite store.
Everything is written under a directory the caller owns; functions block
on file I/O in the caller's thread.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from actors.testing import (
    ClaudeCodeTranscript,
    CodexRollout,
    OpenCodeTranscript,
    PiSession,
    Reply,
    Typed,
)

__all__ = ["SampleSession", "append_typed_turn", "write_sample_catalog"]

_CLAUDE_SESSION = "4f1c8a52-7d1e-4e8b-9a54-2c6f0b3d9e11"
_CODEX_THREAD = "01a06421-3bf7-7ed2-a618-e42b6c961905"
_PI_SESSION = "019e963d-6bd6-7ade-8a49-256ac3391bdd"
_OPENCODE_SESSION = "ses_dd45483e1ffey2Pb2WIeXKDqPz"
_CWD = "/home/user/demo"


class SampleSession(msgspec.Struct, frozen=True, kw_only=True):
    """One written sample session: what to pass to ``Gateway.adopt``."""

    source: str
    path: str
    thread_id: str


def write_sample_catalog(root: Path) -> dict[str, SampleSession]:
    """Write one sample session per tool under ``root``; returns them by source.

    Layout: ``claude/projects/-home-user-demo/<id>.jsonl``,
    ``codex/sessions/2026/11/30/rollout-…-<id>.jsonl``, ``opencode/opencode.db``,
    ``pi/sessions/--home-user-demo--/<ts>_<id>.jsonl``.

    Raises:
        OSError, apsw.Error: a file cannot be written.
    """
    claude = root / "claude" / "projects" / "-home-user-demo" / f"{_CLAUDE_SESSION}.jsonl"
    codex = (root / "codex" / "sessions" / "2026" / "11" / "30"
             / f"rollout-2026-11-30T08-00-00-{_CODEX_THREAD}.jsonl")
    pi = (root / "pi" / "sessions" / "--home-user-demo--"
          / f"2026-11-30T08-00-00-000Z_{_PI_SESSION}.jsonl")
    opencode = root / "opencode" / "opencode.db"
    for path in (claude, codex, pi, opencode):
        path.parent.mkdir(parents=True, exist_ok=True)
    ClaudeCodeTranscript(claude, session_id=_CLAUDE_SESSION, cwd=_CWD).append(
        Typed("Add a changelog entry for 1.2"), Reply("Done."))
    CodexRollout(codex, thread_id=_CODEX_THREAD).append(Typed("Run the unit tests"))
    PiSession(pi, session_id=_PI_SESSION).append(Typed("Summarise the diff"))
    OpenCodeTranscript(opencode, session_id=_OPENCODE_SESSION, title="Demo session",
                       directory=_CWD).append(Typed("Explain the build failure"))
    return {
        "claude": SampleSession(source="claude", path=str(claude), thread_id=_CLAUDE_SESSION),
        "codex": SampleSession(source="codex", path=str(codex), thread_id=_CODEX_THREAD),
        "opencode": SampleSession(source="opencode", path=str(opencode),
                                  thread_id=_OPENCODE_SESSION),
        "pi": SampleSession(source="pi", path=str(pi), thread_id=_PI_SESSION),
    }


def append_typed_turn(session: SampleSession, text: str) -> None:
    """Append a turn a person typed, in the session's own tool format.

    Raises:
        OSError, apsw.Error: the file cannot be written; LookupError: an
        OpenCode session that is not in its store.
    """
    match session.source:
        case "claude":
            ClaudeCodeTranscript(session.path, session_id=session.thread_id,
                                 cwd=_CWD).append(Typed(text))
        case "codex":
            CodexRollout(session.path, thread_id=session.thread_id).append(Typed(text))
        case "pi":
            PiSession(session.path, session_id=session.thread_id).append(Typed(text))
        case _:
            OpenCodeTranscript.resume(session.path, session.thread_id).append(Typed(text))
