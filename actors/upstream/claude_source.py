"""Claude Code as an upstream source: project JSONL transcripts (upstream-formats.md §2).

The light half (locations, discovery) is here; the line classifier is
:mod:`actors.upstream.claude` (with :mod:`actors.upstream.claude_copies`
for rows copied from an earlier session), its sample writer
:mod:`actors.upstream.kit.claude`.
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
    from actors.upstream import jsonl  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half
    from actors.upstream.claude import classify_claude_line  # noqa: PLC0415
    from actors.upstream.claude_copies import claude_copy_classifier  # noqa: PLC0415
    from actors.upstream.common import cwd_in  # noqa: PLC0415
    from actors.upstream.kit.claude import sample, type_turn  # noqa: PLC0415

    return jsonl.line_reading(classify_claude_line, classify_at=claude_copy_classifier,
                              project=cwd_in, sample=sample, type_turn=type_turn)


CLAUDE = Source(name=NAME, title="Claude Code", flag=NAME, metavar="DIR", holds="file",
                locations=locations, discover=discover, no_link="not monitorable",
                reading=reading)
"""Claude Code: every transcript may be linked (no header decides)."""
