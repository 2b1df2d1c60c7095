"""Claude Code as an upstream source: project JSONL transcripts (upstream-formats.md §2).

The light half (locations, discovery) is here; the line classifier is
:mod:`actors.upstream.claude.classify` (with :mod:`actors.upstream.claude.copies`
for rows copied from an earlier session), its sample writer
:mod:`actors.upstream.claude.kit`.

Its heavy half is :data:`actors.upstream.claude.reading.READING`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from actors.upstream.source import Candidate, Source, glob_sessions

if TYPE_CHECKING:
    from actors.upstream.reading import Reading

__all__ = ["CLAUDE"]

NAME = "claude"


def locations(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$CLAUDE_CONFIG_DIR/projects`` (a comma-separated list allowed), else
    ``~/.claude/projects`` and the newer ``~/.config/claude/projects`` (pure)."""
    given = [Path(p.strip()).expanduser() / "projects"
             for p in env.get("CLAUDE_CONFIG_DIR", "").split(",") if p.strip()]
    return given or [home / ".claude" / "projects", home / ".config" / "claude" / "projects"]


def discover(root: Path) -> Iterator[Candidate]:
    """``<root>/<project slug>/<session id>.jsonl`` (sub-agent files are not sessions)."""
    return glob_sessions(NAME, root, "*/*.jsonl", str)


@functools.cache
def reading() -> Reading:
    """Claude Code's heavy half (loaded once, on first use; any thread)."""
    from actors.upstream.claude.reading import READING  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half

    return READING


CLAUDE = Source(name=NAME, title="Claude Code", flag=NAME, metavar="DIR", holds="file",
                locations=locations, discover=discover, no_link="not monitorable",
                reading=reading)
"""Claude Code: every transcript may be linked (no header decides)."""
