"""Small sample sessions in each source's on-disk format, for ``ssa demo`` and tests.

Each registered source (:mod:`actors.upstream.sources`) writes its own
sample with its reading's ``sample`` writer (the test kit's builders, which
write each tool's real format, upstream-formats.md): a Claude Code project
JSONL, a Codex rollout, a Pi v3 session file, an OpenCode 1.18 SQLite store.
Everything is written under a directory the caller owns; functions block
on file I/O in the caller's thread.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from actors.upstream.sources import all_sources, source_named

__all__ = ["SampleSession", "append_typed_turn", "write_sample_catalog"]


class SampleSession(msgspec.Struct, frozen=True, kw_only=True):
    """One written sample session: what to pass to ``Gateway.adopt``."""

    source: str
    path: str
    thread_id: str


def write_sample_catalog(root: Path) -> dict[str, SampleSession]:
    """Write one sample session per registered source under ``root``; returns them by source.

    Each source writes under ``root/<source name>/`` (e.g.
    ``claude/projects/-home-user-demo/<id>.jsonl``,
    ``codex/sessions/2026/11/30/rollout-…-<id>.jsonl``, ``opencode/opencode.db``,
    ``pi/sessions/--home-user-demo--/<ts>_<id>.jsonl``).

    Raises:
        OSError, apsw.Error: a file cannot be written.
    """
    samples: dict[str, SampleSession] = {}
    for source in all_sources():
        path, thread_id = source.reading().sample(root / source.name)
        samples[source.name] = SampleSession(source=source.name, path=path,
                                             thread_id=thread_id)
    return samples


def append_typed_turn(session: SampleSession, text: str) -> None:
    """Append a turn a person typed, in the session's own tool format.

    Raises:
        OSError, apsw.Error: the file cannot be written; LookupError: a
        store session that is not in its store; KeyError: an unregistered source.
    """
    source_named(session.source).reading().type_turn(session.path, session.thread_id, text)
