"""Claude Code as an upstream source: project JSONL transcripts (upstream-formats.md §2).

The light half (locations, discovery) is here; the line classifier is
:mod:`actors.upstream.claude.classify` (with :mod:`actors.upstream.claude.copies`
for rows copied from an earlier session), its sample writer
:mod:`actors.upstream.claude.kit`.

Its heavy half is :data:`actors.upstream.claude.reading.READING`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Mapping

from actors.upstream.regular import open_regular_file
from actors.upstream.source import (
    HEAD_BYTES,
    Candidate,
    Source,
    epoch_ms_of,
    glob_sessions,
    named_by,
    string_field,
)

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from actors.upstream.reading import Reading

__all__ = ["CLAUDE"]

NAME = "claude"


def locations(env: Mapping[str, str], home: str) -> list[str]:
    """``$CLAUDE_CONFIG_DIR/projects`` (a comma-separated list of absolute folders allowed),
    else ``~/.claude/projects`` and the newer ``~/.config/claude/projects`` (pure).

    The value is a list only when every part is absolute (after ``~``): a folder
    whose name holds a comma is one folder, not an absolute half and a relative
    half that each hook would look for in its own project folder.
    """
    value = env.get("CLAUDE_CONFIG_DIR", "")
    parts = [os.path.expanduser(p.strip()) for p in value.split(",") if p.strip()]
    if len(parts) > 1 and not all(os.path.isabs(p) for p in parts):
        parts = [os.path.expanduser(value.strip())]
    given = [os.path.join(p, "projects") for p in parts]
    return given or [os.path.join(home, ".claude", "projects"),
                     os.path.join(home, ".config", "claude", "projects")]


def discover(root: str) -> Iterator[Candidate]:
    """``<root>/<project slug>/<session id>.jsonl`` (sub-agent files are not sessions)."""
    return glob_sessions(NAME, root, "*/*.jsonl", str)


_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*("(?:[^"\\]|\\.)*")')
_CWD = re.compile(rb'"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*("(?:[^"\\]|\\.)*")')


def head(path: str) -> tuple[str | None, int | None]:
    """``(cwd, started_ms)`` of a transcript: the session's own start, not its copies'.

    A conversation continued in a new file (Claude Desktop) begins with rows of
    the earlier session, which keep its ``sessionId`` and its times: they are
    skipped, so the session's start is its first row of its own (its file name
    is its id). When the head holds copies only, the file's modification time
    stands in (it was written when the copy was made). Reads at most
    :data:`HEAD_BYTES`; caller's thread; never raises.
    """
    try:
        with open_regular_file(path) as file:
            data = file.read(HEAD_BYTES)
            mtime_ms = os.fstat(file.fileno()).st_mtime_ns // 1_000_000
    except (OSError, ValueError):
        return None, None
    own = os.path.splitext(os.path.basename(path))[0].encode()
    copies = False
    for line in data.split(b"\n")[:-1]:  # complete lines only
        session = string_field(_SESSION_ID, line)
        if session is not None and session.encode() != own:
            copies = True
            continue
        started = epoch_ms_of(string_field(_TIMESTAMP, line))
        if started is not None:
            return string_field(_CWD, data), started
    return string_field(_CWD, data), (mtime_ms if copies else None)


@functools.cache
def reading() -> Reading:
    """Claude Code's heavy half (loaded once, on first use; any thread)."""
    from actors.upstream.claude.reading import READING  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half

    return READING


CLAUDE = Source(name=NAME, title="Claude Code", flag=NAME, metavar="DIR", holds="file",
                locations=locations, discover=discover, no_link="not monitorable",
                reading=reading, head=head,
                session_name=named_by("actors.upstream.claude.title"))
"""Claude Code: every transcript may be linked (no header decides)."""
